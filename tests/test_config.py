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
        ('[retrieval]\nmin_similarity = "high"\n', "[retrieval].min_similarity must be a float"),
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
        ("[dreaming]\nmin_messages = 'four'\n", "[dreaming].min_messages must be a int"),
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
