"""What the docs audit of round thirteen (docs13) found the product saying unclearly."""

from typing import Any

import pytest
from django.test import Client

from memories.scope import NO_PROJECT


@pytest.mark.django_db
def test_a_preview_search_naming_no_project_says_how_to_name_one(client: Client, owner_token: str) -> None:
    # It answered "project_id: (or cwd) is required with q.", a field name glued to half a sentence.
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    answer = client.get("/api/memories", {"q": "how do we deploy?"}, **auth)
    assert answer.status_code == 400
    assert answer.json() == {"error": "q searches one project; " + NO_PROJECT}
    assert NO_PROJECT == "name the project: pass cwd (the absolute path of your checkout) or project_id."
