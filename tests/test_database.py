import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from yullu_core import postgres as pg
from yullu_core.database import DatabaseUrlError, database_settings, parse_database_url

REPO = Path(__file__).resolve().parent.parent


def test_database_url_selects_that_server_and_never_starts_one(tmp_path: Path) -> None:
    db, kind = database_settings("postgresql://app:s%40cret@db.internal:6543/yullu?sslmode=require", tmp_path)
    assert kind == "external"
    assert (db["HOST"], db["PORT"], db["NAME"], db["USER"], db["PASSWORD"]) == (
        "db.internal",
        "6543",
        "yullu",
        "app",
        "s@cret",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}
    assert not (tmp_path / "pgdata").exists()


def test_a_socket_database_url_is_understood() -> None:
    db = parse_database_url("postgresql://postgres@/yullu?host=/run/pg")
    assert db["HOST"] == "/run/pg" and db["NAME"] == "yullu"


@pytest.mark.parametrize("url", ["mysql://x@y/z", "postgresql://host:5432/"])
def test_a_bad_database_url_is_one_clear_error(url: str) -> None:
    with pytest.raises(DatabaseUrlError):
        parse_database_url(url)


def test_embedded_server_never_loosens_a_private_home(tmp_path: Path) -> None:
    """As root the wheel would chmod every parent of pgdata; ours must leave a 0700 home alone."""
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    home.chmod(0o700)
    yhome = home / ".local" / "share" / "yullu"
    # As root, clusters outside private folders go under a base that the postgres user can reach.
    root_base = Path(tempfile.mkdtemp(prefix="yullu-rootbase-"))
    root_base.chmod(0o755)
    env = {**os.environ, "YULLU_HOME": str(yhome), "YULLU_ROOT_PG_BASE": str(root_base)}
    code = (
        "from yullu_core import paths, postgres as pg; import psycopg;"
        "h = paths.ensure_home(); c = pg.ensure_running(h);"
        "conn = psycopg.connect(**c.conninfo()); print(conn.execute('select 1').fetchone()[0]); conn.close();"
        "pg.stop(h)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=180)
    shutil.rmtree(root_base, ignore_errors=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert not stat.S_IMODE(yhome.stat().st_mode) & 0o077


def test_importing_the_settings_starts_no_server_and_the_first_connection_does(tmp_path: Path) -> None:
    """A type check or `manage.py check` imports the settings: no PostgreSQL for that. A process that
    connects (a Django query, or the broker's and the token check's own connections) starts it."""
    root_base = Path(tempfile.mkdtemp(prefix="yullu-rootbase-"))  # as root, clusters of private homes go here
    root_base.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env |= {"YULLU_HOME": str(tmp_path / "home"), "YULLU_CONFIG": str(tmp_path / "config.toml"),
            "YULLU_ROOT_PG_BASE": str(root_base), "DJANGO_SETTINGS_MODULE": "yullu_site.settings"}  # fmt: skip
    code = (
        "import django; django.setup(); from django.conf import settings; from django.db import connections;"
        "from yullu_core import postgres as pg; cluster = pg.plan(settings.YULLU_HOME);"
        "print(settings.DATABASE_KIND, pg.is_running(cluster), cluster.pgdata.exists());"
        "params = connections['default'].get_connection_params();"
        "print(pg.is_running(cluster), params['host'] == str(cluster.socket_dir)); pg.stop(settings.YULLU_HOME)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=180)
    shutil.rmtree(root_base, ignore_errors=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["embedded", "False", "False", "True", "True"]


def test_the_plan_keeps_root_clusters_out_of_private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    monkeypatch.setattr(pg, "ROOT_BASE", tmp_path / "base")
    monkeypatch.setattr(pg, "is_root", lambda: True)
    cluster = pg.plan(private / "yullu")
    assert cluster.run_as == pg.PG_SYSTEM_USER
    assert not cluster.pgdata.is_relative_to(private)
    monkeypatch.setattr(pg, "is_root", lambda: False)
    assert pg.plan(private / "yullu").pgdata == private / "yullu" / "pgdata"


def test_a_session_removes_only_the_clusters_of_its_own_temporary_homes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other pytest sessions on the machine share YULLU_ROOT_PG_BASE: a session that removed every
    cluster new since it began deleted theirs, mid-initdb or stopped by a test."""
    from tests.processes import clusters_left_by

    monkeypatch.setattr(pg, "ROOT_BASE", tmp_path / "base")
    monkeypatch.setattr(pg, "is_root", lambda: True)
    session, other = tmp_path / "session", tmp_path / "other-session"
    homes = [session / "test_a0", session / "test_b0" / "home", other / "test_a0", session / "test_c0"]
    for home in homes:
        home.mkdir(parents=True, mode=0o700)
        (pg.plan(home).pgdata).mkdir(parents=True)
    (pg.plan(homes[3]).pgdata / "postmaster.pid").write_text("1\n")  # running: kept
    assert clusters_left_by(session) == sorted(pg.plan(h).pgdata.parent for h in homes[:2])


@pytest.mark.django_db
def test_a_hot_read_is_prepared_once_on_djangos_connection_and_sees_its_transaction() -> None:
    from django.db import connection

    from memories.models import Memory
    from yullu_core.database import fetch_prepared

    memory = Memory.objects.create(project_id="prepared/reads", content="uncommitted fact")  # the test's transaction
    sql = "SELECT content FROM memories_memory WHERE id = %s"
    assert fetch_prepared(sql, [memory.pk]) == [("uncommitted fact",)]
    assert fetch_prepared(sql, [memory.pk]) == [("uncommitted fact",)]
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", [sql.replace("%s", "$1")])
        assert cur.fetchone() == (1,)  # one server-side statement, reused
