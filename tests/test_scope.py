import subprocess
from pathlib import Path

import pytest

from memories.scope import canonical_origin, resolve, resolve_path
from tests.processes import git_repo


@pytest.mark.parametrize(
    ("origin", "project_id"),
    [
        ("git@github.com:owner/repo.git", "github.com/owner/repo"),
        ("https://github.com/owner/repo.git", "github.com/owner/repo"),
        ("ssh://git@github.com/owner/repo", "github.com/owner/repo"),
        ("https://github.com/owner/repo/", "github.com/owner/repo"),
        ("https://gitlab.com/group/sub/repo.git", "gitlab.com/group/sub/repo"),
        ("ssh://git@host:2222/o/r", "host:2222/o/r"),
        ("https://user:token@github.com/o/r.git", "github.com/o/r"),
        ("  https://github.com/Owner/Repo.git  ", "github.com/Owner/Repo"),
        # git's scp-like form without a user is the same remote as with one (docs/contract.md §2).
        ("github.com:owner/repo.git", "github.com/owner/repo"),
        ("/srv/git/repo.git", "/srv/git/repo"),  # a local path: unchanged but for .git
    ],
)
def test_origins_canonicalise_as_the_contract_table_says(origin: str, project_id: str) -> None:
    assert canonical_origin(origin) == project_id


def test_a_repo_with_origin_resolves_to_the_canonical_origin_from_a_subfolder(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "checkout", "https://user:secret@github.com/acme/app.git")
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    scope = resolve_path(sub)
    assert scope.project_id == "github.com/acme/app"
    assert scope.git_root == repo.resolve()


def test_a_repo_without_origin_uses_its_folder_name(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "localonly", None)
    assert resolve_path(repo).project_id == "localonly"


def test_outside_git_the_folder_name_qualified_by_its_path_is_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    scope = resolve_path(folder)
    assert scope.project_id.startswith("plain@") and scope.git_root is None


def test_a_git_file_worktree_is_recognised(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "main", "git@github.com:acme/wt.git")
    (repo / "f").write_text("x")
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "add", "f"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"], check=True
    )
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    assert (tmp_path / "wt" / ".git").is_file()
    assert resolve_path(tmp_path / "wt").project_id == "github.com/acme/wt"


@pytest.mark.django_db
def test_resolving_a_cwd_in_a_repo_records_its_location(tmp_path: Path) -> None:
    from memories.models import ProjectLocation

    repo = git_repo(tmp_path / "r", "git@github.com:acme/loc.git")
    scope = resolve(None, str(repo))
    row = ProjectLocation.objects.get(project_id="github.com/acme/loc")
    assert row.git_root == str(repo.resolve()) == str(scope.git_root)
    assert resolve("github.com/acme/loc", None).git_root == repo.resolve()


@pytest.mark.django_db
def test_an_unchanged_location_is_read_not_rewritten_until_last_seen_is_stale(tmp_path: Path) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.models import ProjectLocation
    from memories.scope import LAST_SEEN_GRANULARITY

    repo = git_repo(tmp_path / "r", "git@github.com:acme/seen.git")
    resolve(None, str(repo))
    with CaptureQueriesContext(connection) as calls:
        resolve(None, str(repo))  # every tool call with a cwd does this
    assert [q["sql"].split()[0] for q in calls.captured_queries] == ["SELECT"]
    stale = ProjectLocation.objects.get(project_id="github.com/acme/seen").last_seen - LAST_SEEN_GRANULARITY
    ProjectLocation.objects.filter(project_id="github.com/acme/seen").update(last_seen=stale)
    resolve(None, str(repo))
    assert ProjectLocation.objects.get(project_id="github.com/acme/seen").last_seen > stale
    moved = git_repo(tmp_path / "elsewhere", "git@github.com:acme/seen.git")  # a second clone
    resolve(None, str(moved))
    assert ProjectLocation.objects.get(project_id="github.com/acme/seen").git_root == str(moved.resolve())


def test_a_read_with_an_explicit_project_id_does_not_look_up_its_repo() -> None:
    from memories.scope import project_of

    # No database access at all (this test has no django_db mark: a query would fail it).
    assert project_of(" acme/app ", None) == "acme/app"


def test_the_vector_literal_is_the_seven_decimal_text_pgvector_reads() -> None:
    import numpy as np

    from memories.embedding.vector_index import vector_literal

    v = np.array([0.5, -0.123456789, 1e-9, -1.0], dtype=np.float32)
    assert (
        vector_literal(v)
        == "[" + ",".join(f"{x:.7f}" for x in v) + "]"
        == "[0.5000000,-0.1234568,0.0000000,-1.0000000]"
    )
    w = v.copy()
    w[0] = 0.25
    assert vector_literal(w).startswith("[0.2500000,")  # another array: not the remembered text


@pytest.mark.django_db
def test_explicit_project_id_wins_over_cwd(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "r", "git@github.com:acme/one.git")
    assert resolve("explicit/project", str(repo)).project_id == "explicit/project"
