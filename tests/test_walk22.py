"""Walk 22: a new user's first hour, every command with right and wrong arguments (docs/testing.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sync.services import reconcile_folder
from yullu_core.errors import UserError


def _checkout(folder: Path, origin: str) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", origin], check=True)
    return folder


@pytest.mark.django_db(transaction=True)
def test_a_project_with_no_known_checkout_is_not_blamed_on_the_checkout_you_are_in(tmp_path: Path) -> None:
    """`yullu reconcile --project nope/never` in a checkout of another project said "<that checkout> is not inside
    a git repository": it is one, of another project. The message names what the folder is a checkout of."""
    kelp = _checkout(tmp_path / "kelp", "git@github.com:acme/kelp.git")
    with pytest.raises(UserError) as refused:
        reconcile_folder(str(kelp), "acme/never")
    message = str(refused.value)
    assert "not inside a git repository" not in message
    assert f"{kelp} is a checkout of github.com/acme/kelp, not of acme/never" in message
    assert "no checkout of acme/never is known" in message
    # outside any checkout the old sentence stays right
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UserError, match="is not inside a git repository and no checkout of acme/never is known"):
        reconcile_folder(str(plain), "acme/never")
