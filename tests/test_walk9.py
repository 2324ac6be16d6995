"""What a ninth new-user walk met, each as it was met: the CLI's argument errors named internal names or the
wrong command, `yullu --port N` (a bare `yullu` is `yullu serve`) was refused, `yullu install --server --token`
replaced a running local server's token, the admin's delete page listed search-index rows, and as root the
banner's `data:` folder did not hold the database."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memories.models import Memory, MemoryVector, Term
from memories.scope import resolve
from memories.write import create
from tests.processes import product_env, run_cli
from yullu_cli.banner import database_line
from yullu_cli.main import main, with_default_command
from yullu_core.postgres import Cluster


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "usage", "said"),
    [
        (["anchors"], "usage: yullu anchors", "the following arguments are required: {check}"),
        (["sync"], "usage: yullu sync", "the following arguments are required: {compact}"),
        (["memories"], "usage: yullu memories", "the following arguments are required: {list,search,show,add,rm}"),
        (["tokens"], "usage: yullu tokens", "the following arguments are required: {create,list,revoke}"),
        (["token", "extra"], "usage: yullu token [-h]", "yullu token: error: unrecognized arguments: extra"),
        (["stdio", "--bad"], "usage: yullu stdio [-h]", "yullu stdio: error: unrecognized arguments: --bad"),
        (["memories", "list", "--bad"], "usage: yullu memories list", "unrecognized arguments: --bad"),
        (["--port", "0"], "usage: yullu serve", "yullu serve: error: argument --port: must be a whole number"),
        (["-v", "--workers", "0"], "usage: yullu serve", "yullu serve: error: argument --workers"),
    ],
)
def test_a_bad_command_line_is_refused_with_the_commands_own_usage_and_words(
    argv: list[str], usage: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "required: anchors_command" / "required: op"; `yullu token extra` printed `usage: yullu [-h] …`;
    # `yullu --port 0` said "invalid choice: '0'" as if 0 were a command.
    err = refusal(argv, capsys)
    assert err.startswith(usage) and said in err, err
    assert "_command" not in err and "required: op" not in err and "invalid choice" not in err, err


def test_options_with_no_command_are_serves_and_a_command_is_left_alone() -> None:
    assert with_default_command(["--port", "47900"]) == ["serve", "--port", "47900"]
    assert with_default_command(["-v", "--port", "47900"]) == ["-v", "serve", "--port", "47900"]
    for kept in ([], ["-v"], ["--version"], ["-h"], ["token"], ["-v", "memories", "list"]):
        assert with_default_command(kept) == kept


def local_server_home(tmp_path: Path, token: str) -> dict[str, str]:
    home = tmp_path / "yhome"
    home.mkdir(mode=0o700)
    (home / "admin-password").write_text("pw\n")  # the first `yullu serve` wrote it: a local server's home
    (home / "token").write_text(token + "\n")
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    return product_env(home, YULLU_EMBED_PROVIDER="none", HOME=str(tmp_path / "home"))


def test_install_for_a_team_server_leaves_a_local_servers_token_alone_and_says_how(tmp_path: Path) -> None:
    env = local_server_home(tmp_path, "yl_local")
    ran = run_cli(["install", "claude", "--server", "http://127.0.0.1:1", "--token", "yl_team"], env)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    said = ran.stderr.strip()
    assert said.startswith(f"yullu: {env['YULLU_HOME']} belongs to this machine's own Yul'lu server"), said
    assert "YULLU_HOME=$HOME/.local/share/yullu-team yullu install --server" in said
    assert said.endswith("nothing was installed.") and said.count(". ") == 0, said
    assert (Path(env["YULLU_HOME"]) / "token").read_text() == "yl_local\n"
    assert not (tmp_path / "home" / ".claude" / "settings.json").exists()


def test_install_for_a_team_server_with_the_token_already_there_goes_on(tmp_path: Path) -> None:
    env = local_server_home(tmp_path, "yl_same")
    ran = run_cli(["install", "claude", "--server", "http://127.0.0.1:1", "--token", "yl_same"], env)
    assert ran.returncode == 0, ran.stderr
    token = Path(env["YULLU_HOME"]) / "token"
    assert token.read_text() == "yl_same\n" and stat.S_IMODE(token.stat().st_mode) == 0o600


@pytest.fixture
def staff(client: Client, owner: Any) -> Client:
    client.force_login(owner)
    return client


@pytest.mark.django_db
def test_the_admins_delete_page_lists_the_memory_not_its_index_rows(staff: Client) -> None:
    m = create.store_memory(
        resolve("acme/walk9", None), "Releases are tagged from main every Thursday", "process"
    ).memory
    assert Term.objects.filter(memory_id=m.pk).exists() and MemoryVector.objects.filter(memory=m).exists()
    page = staff.get(f"/admin/memories/memory/{m.pk}/delete/").content.decode()
    assert "Releases are tagged from main every Thursday" in page and "Memories: 1" in page
    for internal in ("Term", "Memory vector", "MemoryVector object", "Recall feedback"):
        assert internal not in page, internal
    staff.post(f"/admin/memories/memory/{m.pk}/delete/", {"post": "yes"})
    assert not Memory.objects.filter(pk=m.pk).exists()
    assert not Term.objects.filter(memory_id=m.pk).exists() and not MemoryVector.objects.filter(memory_id=m.pk).exists()


def test_the_banner_names_the_database_folder_when_it_is_not_under_the_data_folder() -> None:
    data = Path("/root/.local/share/yullu")
    elsewhere = Cluster(Path("/var/lib/yullu/clusters/e5b8a307528f/pgdata"), Path("/tmp/s"), Path("/b"), "yullu-pg")
    assert database_line(data, elsewhere) == (
        "  database:   /var/lib/yullu/clusters/e5b8a307528f/pgdata  (embedded PostgreSQL, run as yullu-pg)"
    )
    assert database_line(data, Cluster(data / "pgdata", data / "pgdata", Path("/b"), None)) is None
    assert database_line(data, None) is None  # DATABASE_URL: the server is elsewhere by choice


@pytest.mark.django_db
def test_most_recalled_counts_stay_on_one_line(staff: Client) -> None:
    # A two-digit count broke after its digits at 1280 px: "13" above "×" (dashboard and Stats; walk 9).
    from memories.models import EventKind, MemoryEvent

    m = create.store_memory(
        resolve("acme/walk9", None), "Releases are tagged from main every Thursday", "process"
    ).memory
    for _ in range(2):
        MemoryEvent.objects.create(kind=EventKind.RECALLED, memory=m, project_id=m.project_id)
    for page in ("/admin/", "/admin/memories/memory/stats/"):
        html = staff.get(page).content.decode()
        assert f'<td class="y-r y-nowrap">2×</td><td><a href="/admin/memories/memory/{m.pk}/change/">' in html, page
