"""Yul'lu as a package: pyproject.toml declares what requirements.txt pins, `yullu --version`, a
bare `yullu` serves, and a wheel installed into a fresh venv outside the repository (no PyTorch)
reaches ready and serves the admin's stylesheet."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.processes import REPO, run_cli, stop, wait_ready
from yullu_cli import main as cli


def pins(name: str) -> dict[str, str]:
    """`package==version` lines of a requirements file (its `-r` includes not followed)."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            found[req.name.lower()] = str(req.specifier).removeprefix("==")
    return found


def declared() -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = {k: [Requirement(r) for r in v] for k, v in project["optional-dependencies"].items()}
    return [Requirement(r) for r in project["dependencies"]], extras


def test_pyproject_declares_exactly_the_runtime_pins_of_requirements_txt_with_ranges_that_hold_them() -> None:
    runtime, _ = declared()
    pinned = pins("requirements.txt")
    names = {r.name.lower() for r in runtime}
    assert not set(pinned) - names, f"add to pyproject.toml [project].dependencies: {sorted(set(pinned) - names)}"
    assert not names - set(pinned), f"pin in requirements.txt or drop from pyproject: {sorted(names - set(pinned))}"
    for req in runtime:
        assert req.specifier.contains(pinned[req.name.lower()]), f"{req} does not allow the pin {pinned[req.name]}"


def test_every_extra_is_pinned_for_make_test_and_no_torch_in_the_runtime() -> None:
    _, extras = declared()
    pinned = pins("requirements-export.txt") | pins("requirements-dev.txt")
    for name, reqs in extras.items():
        for req in reqs:
            assert req.name.lower() in pinned, f"extra {name}: {req.name} has no pin in requirements-*.txt"
            assert req.specifier.contains(pinned[req.name.lower()]), f"extra {name}: {req} vs {pinned[req.name]}"
    runtime = {r.name.lower() for r in declared()[0]}
    assert not runtime & {"torch", "sentence-transformers", "transformers", "pytest", "mypy", "ruff"}


def test_every_template_is_inside_a_package_so_the_wheel_ships_it() -> None:
    stray = subprocess.run(["git", "ls-files", "templates"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert stray == [], f"move these under yullu_site/templates/ (settings has no project-level folder): {stray}"


def test_package_discovery_leaves_the_benchmarks_out_of_the_wheel() -> None:
    from setuptools import find_packages  # type: ignore[import-untyped]  # (the discovery the build uses)

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = find_packages(where=str(REPO), include=config["packages"]["find"]["include"])
    assert "yullu_cli" in shipped and "memories" in shipped
    assert not [p for p in shipped if p.split(".")[0] == "bench" or ".bench" in p], shipped


def test_yullu_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    ran = run_cli(["--version"], dict(os.environ))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"yullu {version('yullu')}"


def test_a_bare_yullu_starts_the_server_like_yullu_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[tuple[int | None, str]] = []
    monkeypatch.setattr(cli, "cmd_serve", lambda args: served.append((args.port, args.role)))
    cli.main([])
    cli.main(["-v"])
    assert served == [(None, "all"), (None, "all")]


def built_version(checkout: Path) -> Version:
    """The version pip gives the package built from `checkout` (its metadata only: no wheel is built)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    ran = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--no-deps", "--ignore-installed",
                          "--report", "-", str(checkout)], cwd=checkout, env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    return Version(json.loads(ran.stdout)["install"][0]["metadata"]["version"])


def _clone_building_like_this_checkout(tmp_path: Path, *paths: str) -> tuple[Path, list[str]]:
    """A clone of this repository with only `paths` checked out and this checkout's build files
    (committed or not) copied in; and the git command line that runs in it."""
    clone = tmp_path / "clone"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(clone)]
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clone)], check=True, timeout=300)
    subprocess.run([*git, "checkout", "-q", "HEAD", "--", "pyproject.toml", *paths], check=True)
    for name in ("pyproject.toml", "yullu_build.py"):
        shutil.copy(REPO / name, clone / name)
    return clone, git


@pytest.mark.slow
def test_each_commits_wheel_has_a_higher_version_so_pip_install_over_an_older_one_upgrades(tmp_path: Path) -> None:
    # Found installing today's wheel over an older one: both were 0.1.0, and pip said "yullu is already installed
    # with the same version as the provided wheel" and kept the old code (and its migrations).
    clone, git = _clone_building_like_this_checkout(tmp_path, "README.md")
    subprocess.run([*git, "add", "pyproject.toml", "yullu_build.py"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "this pyproject"], check=True)
    before = built_version(clone)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "a later commit"], check=True)
    after = built_version(clone)
    assert Version("0.1.0") < before < after, (before, after)


@pytest.mark.slow
def test_a_module_deleted_since_the_last_build_in_this_checkout_is_not_in_the_next_wheel(tmp_path: Path) -> None:
    # Found building two commits' wheels in one clone: setuptools keeps build/lib between builds, and 102 files the
    # later commit had deleted or moved shipped in its wheel (the old yullu_site/mcp/ shadowed its mcp.py).
    clone, _ = _clone_building_like_this_checkout(tmp_path, "README.md", "yullu_core")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}

    def wheel_files() -> list[str]:
        out = tmp_path / "dist"
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(clone)],
                       check=True, cwd=clone, env=env, capture_output=True, timeout=600)  # fmt: skip
        (wheel,) = out.glob("yullu-*.whl")
        return zipfile.ZipFile(wheel).namelist()

    assert "yullu_core/tokens.py" in wheel_files()
    (clone / "yullu_core/tokens.py").unlink()
    assert "yullu_core/tokens.py" not in wheel_files()


# --- the installed wheel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv outside the repository with only the wheel built from it (and its dependencies,
    from pip's cache when they are there) installed."""
    base = Path(tempfile.mkdtemp(prefix="yullu-wheel-"))
    base.chmod(0o755)  # as root, PostgreSQL's system user must reach its data folder
    try:
        wheels, env = base / "dist", outside_env(base)  # no PYTHONPATH: pip must not see the checkout
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                       check=True, cwd=base, env=env, timeout=600)  # fmt: skip
        (wheel,) = wheels.glob("yullu-*.whl")
        subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, env=env, timeout=300)
        pip = [str(base / "venv/bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, str(wheel)], check=True, cwd=base, env=env, timeout=1200)
        yield base
    finally:
        stop_pg = "from yullu_core import paths, postgres as pg; pg.stop(paths.ensure_home())"
        if (base / "venv/bin/python").exists() and (base / "home").exists():
            subprocess.run([str(base / "venv/bin/python"), "-c", stop_pg], env=outside_env(base), cwd=base,
                           timeout=120, check=False)  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)


def outside_env(base: Path) -> dict[str, str]:
    """No trace of the repository or the test settings: what a user's shell would have."""
    drop = ("PYTHON", "DATABASE_URL", "YULLU_", "DJANGO_", "CELERY_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return env | {
        "YULLU_HOME": str(base / "home"),
        "YULLU_CONFIG": str(base / "config.toml"),
        "YULLU_ROOT_PG_BASE": str(base / "pg"),
        "PATH": f"{base / 'venv/bin'}:{env.get('PATH', '')}",
    }


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_wheel_installs_outside_the_repo_without_torch_and_serves(installed: Path, free_tcp_port: int) -> None:
    env, python = outside_env(installed), str(installed / "venv/bin/python")
    probe = "import importlib.util as u, yullu_site; print(u.find_spec('torch') is None, yullu_site.__file__)"
    probed = subprocess.run([python, "-c", probe], env=env, cwd=installed, capture_output=True, text=True)
    assert probed.returncode == 0, probed.stderr[-3000:]
    no_torch, where = probed.stdout.split()
    assert no_torch == "True" and "site-packages" in where and str(REPO) not in where
    # both models ship inside the wheel: the reranker judges a pair from the installed files
    judge = "from memories.search import rerank; print(rerank.model_dir(), len(rerank.judge.logits('a', ['b'])))"
    judged = subprocess.run([python, "-c", judge], env=env, cwd=installed, capture_output=True, text=True)
    assert judged.returncode == 0, judged.stderr[-3000:]
    model, pairs = judged.stdout.split()
    assert "site-packages" in model and pairs == "1"
    version = subprocess.run(["yullu", "--version"], env=env, cwd=installed, capture_output=True, text=True)
    assert re.fullmatch(r"yullu \d+\.\d+\.\d+\S*", version.stdout.strip()), version
    (wheel,) = (installed / "dist").glob("yullu-*.whl")
    benchmarks = [n for n in zipfile.ZipFile(wheel).namelist() if n.startswith(("bench/", "yullu_cli/bench/"))]
    assert benchmarks == [], "the benchmarks run from a checkout; the wheel must not ship them"
    bench = subprocess.run(["yullu", "bench", "codebase"], env=env, cwd=installed, capture_output=True, text=True)
    assert bench.returncode == 1 and "benchmarks run from a checkout" in bench.stderr, bench
    assert "Traceback" not in bench.stderr and len(bench.stderr.strip().splitlines()) == 1, bench.stderr

    log = installed / "serve.log"
    with open(log, "w") as out:
        server = subprocess.Popen(["yullu", "serve", "--port", str(free_tcp_port)], env=env, cwd=installed, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True, text=True)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{free_tcp_port}"
        wait_ready(url, server, timeout=600, output=log.read_text)
        status = httpx.get(f"{url}/api/status").json()
        assert status["ready"] is True, status
        page = httpx.get(f"{url}/admin/login/")
        assert page.status_code == 200
        sheets = re.findall(r'href="([^"]+\.css)"', page.text)
        assert any("/static/" in s for s in sheets), page.text[:2000]
        for sheet in sheets:
            css = httpx.get(url + sheet if sheet.startswith("/") else sheet)
            assert css.status_code == 200 and css.headers["content-type"].startswith("text/css"), sheet
        ours = httpx.get(f"{url}/static/yullu/admin.css")
        assert ours.status_code == 200 and ours.text.strip()
    finally:
        stop(server)
