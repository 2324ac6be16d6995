"""Review 22's small findings, each fixed by the lead."""

from __future__ import annotations

import httpx
import pytest

from yullu_cli import team_server


def test_a_team_servers_sentence_is_printed_with_its_control_characters_escaped() -> None:
    """Doctor and `yullu install --server` print the team server's own sentence; one holding an escape sequence
    (a hostile or broken server) reached the terminal as it came."""
    said = team_server._said(b'{"error": "no grant \\u001b]52;c;cm0gLXJmIH4=\\u0007 for this project"}')
    assert "\x1b" not in said and "\x07" not in said
    assert said.startswith("no grant ") and said.endswith(" for this project")


@pytest.mark.django_db(transaction=True)
def test_a_project_reader_is_not_shown_where_the_servers_checkout_lives(live_server_url: str, owner_token: str) -> None:
    """Walk 19: GET /api/projects gave every reader of a project the team server's checkout path (`git_root`);
    the install's superuser still sees it."""
    from access import services as access_services
    from access.models import Project
    from memories.models import ProjectLocation

    Project.objects.get_or_create(project_id="github.com/acme/app")
    ProjectLocation.objects.create(project_id="github.com/acme/app", git_root="/srv/yullu/checkouts/acme-app")
    bob = access_services.add_user("bob")
    access_services.grant("bob", "github.com/acme/app", "read")
    tokens = {"owner": owner_token, "bob": access_services.create_token(bob, "laptop").raw}
    seen = {}
    for name, token in tokens.items():
        answer = httpx.get(f"{live_server_url}/api/projects", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        answer.raise_for_status()
        seen[name] = {row["project_id"]: row["git_root"] for row in answer.json()["projects"]}
    assert seen["owner"]["github.com/acme/app"] == "/srv/yullu/checkouts/acme-app"
    assert seen["bob"] == {"github.com/acme/app": None}
