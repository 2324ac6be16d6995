from pathlib import Path

import pytest

from yullu_core import config


def test_first_run_writes_the_default_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    cfg = config.load(path)
    assert path.exists()
    assert cfg["embedding"]["provider"] == "local"
    assert cfg["dreaming"]["interval"] == "30m"
    assert config.read_toml(path)["server"]["port"] == 47823


def test_the_default_file_names_every_environment_override() -> None:
    # Its header is where a user reading config.toml learns which variables win over it.
    missing = [var for var in config.ENV_OVERRIDES if var not in config.DEFAULT_FILE]
    assert missing == []


def test_the_readme_names_every_config_section() -> None:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    sections = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    assert [s for s in config.SCHEMA if f"`[{s}]`" not in sections.split("Per project")[0]] == []


def test_file_values_override_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[retrieval]\nmin_similarity = 0.5\n[dreaming]\nmin_messages = 3\n")
    cfg = config.load(path)
    assert cfg["retrieval"]["min_similarity"] == 0.5
    assert cfg["dreaming"]["min_messages"] == 3
    assert cfg["sync"]["enabled"] is True


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[embedding]\nprovider = "local"\n')
    monkeypatch.setenv("YULLU_EMBED_PROVIDER", "none")
    monkeypatch.setenv("YULLU_PORT", "50001")
    cfg = config.load(path)
    assert cfg["embedding"]["provider"] == "none"
    assert cfg["server"]["port"] == 50001


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[retrieval\nmin_similarity = 0.5", "not valid TOML"),
        ("[retrieval]\nmin_similarity = 2.0\n", "[retrieval].min_similarity must be between 0.0 and 1.0"),
        ('[retrieval]\nmin_similarity = "high"\n', "[retrieval].min_similarity must be a number, not 'high'"),
        ('[server]\nport = "abc"\n', "[server].port must be a whole number, not 'abc'"),  # walk 13: "a int"
        ('[server]\nallowed_hosts = "x"\n', "[server].allowed_hosts must be a list of strings, not 'x'"),
        ("[sync]\nenabled = 1\n", "[sync].enabled must be true or false, not 1"),
        ("[embedding]\nprovider = 5\n", "[embedding].provider must be text in quotes, not 5"),
        ('[embedding]\nprovider = "magic"\n', "[embedding].provider must be one of"),
        ('[dreaming]\ninterval = "soon"\n', "[dreaming].interval must be a duration"),
        ("[nope]\nx = 1\n", "unknown section [nope]"),
        ("[sync]\nenabledd = true\n", "unknown key [sync].enabledd"),
    ],
)
def test_a_corrupt_file_names_the_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_environment_value_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_PORT", "eighty")
    with pytest.raises(config.ConfigError, match="YULLU_PORT must be a whole number"):
        config.load(tmp_path / "c.toml")


def test_repo_layer_cannot_set_api_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo = tmp_path / "repo"
    (repo / ".yullu").mkdir(parents=True)
    (repo / ".yullu" / "config.toml").write_text(
        '[openai]\napi_key = "sk-committed-by-mistake"\n[dreaming]\nmin_messages = 4\n'
    )
    cfg, origin = config.load_for_project("github.com/o/r", repo)
    assert cfg["openai"]["api_key"] == ""
    assert cfg["dreaming"]["min_messages"] == 4
    assert origin["dreaming.min_messages"] == "repo"
    assert origin["openai.api_key"] == "global"


def test_embedding_settings_are_global_only_and_a_committed_key_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # SPEC §8: embedding settings decide which vectors exist, for every project: no per-project layer sets them.
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    for name in ("OPENAI_API_KEY", "YULLU_EMBED_PROVIDER", "YULLU_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)
    repo = tmp_path / "repo"
    (repo / ".yullu").mkdir(parents=True)
    (repo / ".yullu" / "config.toml").write_text(
        '[embedding]\nprovider = "voyage"\nmodel = "voyage-code-3"\n[openai]\napi_key = "sk-committed-by-mistake"\n'
    )
    user_file = config.project_user_file("github.com/o/r")
    user_file.parent.mkdir(parents=True)
    user_file.write_text('[embedding]\nprovider = "openai"\n')
    base = config.load()
    cfg, origin = config.load_for_project("github.com/o/r", repo)
    assert cfg["embedding"] == base["embedding"]
    assert origin["embedding.provider"] == origin["embedding.model"] == "global"
    assert cfg["openai"]["api_key"] == "" and "api_key" in caplog.text


def test_user_project_layer_wins_over_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    repo = tmp_path / "repo"
    (repo / ".yullu").mkdir(parents=True)
    (repo / ".yullu" / "config.toml").write_text("[dreaming]\nmin_messages = 4\n")
    user_file = config.project_user_file("github.com/o/r")
    user_file.parent.mkdir(parents=True)
    user_file.write_text("[dreaming]\nmin_messages = 7\n")
    cfg, origin = config.load_for_project("github.com/o/r", repo)
    assert cfg["dreaming"]["min_messages"] == 7
    assert origin["dreaming.min_messages"] == "user"


def test_processes_starting_together_on_a_new_home_agree(tmp_path: Path) -> None:
    """Web, worker and beat start at once on a fresh $YULLU_HOME: none may fail or read half a file."""
    import os
    import subprocess
    import sys

    from tests.processes import REPO

    env = {
        **os.environ,
        "YULLU_HOME": str(tmp_path / "home"),
        "YULLU_CONFIG": str(tmp_path / "cfg" / "c.toml"),
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "DJANGO_SETTINGS_MODULE": "yullu_site.settings",
    }
    code = "from django.conf import settings; print(settings.SECRET_KEY, settings.YULLU['server']['port'])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-300:] for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert not [f for f in (tmp_path / "home").iterdir() if f.name.endswith(".tmp")]


def test_web_nodes_share_a_secret_key_from_the_environment(tmp_path: Path) -> None:
    """YULLU_SECRET_KEY (for several web nodes) wins over the per-home key file, which is then not written."""
    import os
    import subprocess
    import sys

    from tests.processes import REPO

    env = {
        **os.environ,
        "YULLU_HOME": str(tmp_path / "home"),
        "YULLU_CONFIG": str(tmp_path / "c.toml"),
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "DJANGO_SETTINGS_MODULE": "yullu_site.settings",
        "YULLU_SECRET_KEY": "shared-by-every-web-node",
    }
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip() == "shared-by-every-web-node"
    assert not (tmp_path / "home" / "secret_key").exists()


def test_a_repo_config_from_a_newer_version_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    repo = tmp_path / "repo"
    (repo / ".yullu").mkdir(parents=True)
    (repo / ".yullu" / "config.toml").write_text(
        "[sync]\nshiny_new_option = true\n[dreaming]\nmin_messages = 4\n[hologram]\nenabled = true\n"
    )
    cfg, _ = config.load_for_project("github.com/o/newer", repo)
    assert cfg["dreaming"]["min_messages"] == 4
    assert "[sync].shiny_new_option" in caplog.text and "[hologram]" in caplog.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[dreaming]\nmin_messages = 'four'\n", "[dreaming].min_messages must be a whole number, not 'four'"),
        ("[dreaming\n", "not valid TOML"),
        (b"[dreaming]\nmin_messages = 4 # \xff\xfe\n", "not UTF-8"),
    ],
)
def test_a_bad_repo_config_is_one_sentence_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | bytes, expected: str
) -> None:
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    repo = tmp_path / "repo"
    (repo / ".yullu").mkdir(parents=True)
    path = repo / ".yullu" / "config.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(config.ConfigError) as err:
        config.load_for_project("github.com/o/bad", repo)
    assert expected in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_yullu_folder_symlinked_out_of_the_repository_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YULLU_CONFIG", str(tmp_path / "global.toml"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.toml").write_text("[dreaming]\nmin_messages = 4\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".yullu").symlink_to(outside)
    with pytest.raises(config.ConfigError, match="outside the repository"):
        config.load_for_project("github.com/o/escape", repo)


def test_a_global_config_that_is_not_utf8_stops_serve_with_one_sentence(tmp_path: Path) -> None:
    from tests.processes import product_env, run_cli

    path = tmp_path / "config.toml"
    path.write_bytes(b"[server]\nport = 47999 # caf\xe9 in Latin-1\n")
    done = run_cli(["serve"], product_env(tmp_path / "home", YULLU_CONFIG=str(path)), timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{path}: not UTF-8" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def _said(args: list[str], env: dict[str, str], prefix: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    import subprocess
    import sys

    from tests.processes import REPO

    done = subprocess.run([*prefix, sys.executable, "-m", "yullu_cli.main", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("folder", "is a folder, not a file; replace it with a TOML file or delete it."),
        ("pipe", "is a named pipe, not a file; replace it with a TOML file or delete it."),  # it waited for ever
        ("loop", "cannot be read (Too many levels of symbolic links)."),  # doctor: OSError: [Errno 40] …
    ],
)
def test_a_config_that_is_no_file_is_one_sentence_and_nothing_is_created(
    tmp_path: Path, kind: str, expected: str
) -> None:
    """Chaos drills round nine: config.toml a folder ("cannot be read (Is a directory)" with no fix; doctor
    printed 'ConfigError: …' and 'fix: see the message above'), a named pipe (every command waited for a
    writer for ever), a loop of symbolic links; and each command made an empty home before saying so."""
    import os

    from tests.processes import product_env

    path, home = tmp_path / "config.toml", tmp_path / "home"
    {"folder": path.mkdir, "pipe": lambda: os.mkfifo(path), "loop": lambda: path.symlink_to(path)}[kind]()
    env = product_env(home, YULLU_CONFIG=str(path))
    os.rmdir(home)  # product_env makes it; no command may
    for args in (["memories", "list"], ["serve"], ["token"]):
        assert _said(args, env) == (1, [f"yullu: {path}: {expected}"]), args
    assert _said(["doctor"], env) == (1, [f"FAIL  config    {path}: {expected}"])
    assert not home.exists()


def test_a_home_that_is_a_file_or_cannot_be_entered_is_one_sentence(tmp_path: Path) -> None:
    """Chaos drills round nine: a home that is a file was said as '<home>: File exists.'; one this user may
    not enter (another user's, chmod 000) as '<home>/secret_key: Permission denied.' by every command."""
    import os
    import pwd
    import shutil

    from tests.processes import product_env

    home = tmp_path / "home"
    config_file = tmp_path / "config.toml"
    config_file.write_text("")
    env = product_env(home, YULLU_CONFIG=str(config_file))
    os.rmdir(home)
    home.write_text("not a folder")
    for args in (["memories", "list"], ["serve"]):
        assert _said(args, env) == (
            1,
            [f"yullu: the data folder {home} is a file, not a folder; move that file away, or set YULLU_HOME to a "
             "folder of yours."],
        ), args  # fmt: skip
    home.unlink()
    home.mkdir(mode=0o700)
    (home / "token").write_text("kept")
    home.chmod(0)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root enters any folder: take away the capabilities that let it
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv (util-linux) as root")
        caps = "-dac_override,-dac_read_search"
        prefix = ("setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}")
    me = pwd.getpwuid(os.geteuid()).pw_name
    try:
        for args in (["memories", "list"], ["doctor"], ["serve"]):
            # doctor prints each check as it is done: the config (outside the home) was read
            done = [f"ok    config    {config_file}"] if args == ["doctor"] else []
            assert _said(args, env, prefix) == (
                1,
                [*done, f"yullu: the data folder {home} cannot be opened by this user ({me}; it belongs to {me}, "
                 f"mode 000); make it yours with: chown -R {me} {home} && chmod 700 {home}, or set YULLU_HOME to a "
                 "folder of yours."],
            ), args  # fmt: skip
        assert _said(["mcp-headers"], env, prefix) == (  # it said "no API token in <home>; run `yullu serve`"
            1,
            [f"yullu: the API token {home}/token cannot be read (Permission denied); fix the owner and mode of "
             f"{home}, or set YULLU_HOME."],
        )  # fmt: skip
    finally:
        home.chmod(0o700)
    assert (home / "token").read_text() == "kept" and sorted(p.name for p in home.iterdir()) == ["token"]


def test_check_file_gives_the_sentence_load_would_give_and_ignores_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The admin's settings page asks this before it writes (yullu_core/settings_edit.file_problem).
    path = tmp_path / "config.toml"
    path.write_text("[retrieval]\nmin_similarity = 2\n")
    with pytest.raises(config.ConfigError) as by_load:
        config.load(path)
    with pytest.raises(config.ConfigError) as by_check:
        config.check_file(path)
    assert str(by_check.value) == str(by_load.value)
    path.write_text("[retrieval]\nmin_similarity = 0.5\n")
    monkeypatch.setenv("YULLU_EMBED_PROVIDER", "nonsense")
    config.check_file(path)  # the file alone: a wrong environment variable is not the file's fault


def test_the_settings_page_uses_configs_public_functions_only() -> None:
    import yullu_core.settings_edit as settings_edit

    source = Path(settings_edit.__file__).read_text()
    imported = source.split("from .config import (", 1)[1].split(")", 1)[0]
    assert [name for name in imported.replace(",", " ").split() if name.startswith("_")] == []
