"""Walk 14 (a judge's first day, fresh clone and home): the admin's Settings page over a config.toml broken
while the server runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

pytestmark = pytest.mark.django_db

SETTINGS = "/admin/memories/memory/settings/"
BROKEN = {
    # a typo in a section header: invalid TOML
    "not valid TOML": '[dreaming]\ninterval = "30m"\n\n[retrieval\nmin_similarity = 0.5\n',
    # valid TOML, a value the next start refuses
    "[retrieval].min_similarity": '[dreaming]\ninterval = "30m"\n\n[retrieval]\nmin_similarity = "high"\n',
}


@pytest.mark.parametrize("said", list(BROKEN))
def test_settings_over_a_broken_config_file_say_so_and_save_nothing(
    client: Client, owner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    # Walk 14: a config.toml broken after start (a typo saved in an editor) left the page showing the values read
    # at start with no word of it, and Save answered "Server Error (500)" (tomlkit's parse error).
    file = tmp_path / "config.toml"
    file.write_text(BROKEN[said])
    monkeypatch.setenv("YULLU_CONFIG", str(file))
    monkeypatch.setitem(settings.YULLU, "dreaming", {**settings.YULLU["dreaming"]})
    client.force_login(owner)

    page = client.get(SETTINGS).content.decode()
    assert f"{file}:" in page and said in page and "what the server read when it started" in page

    before = settings.YULLU["dreaming"]["interval"]
    form = {"dreaming.interval": "45m" if before != "45m" else "50m"}
    answer = client.post(SETTINGS, form, follow=True)
    assert answer.status_code == 200
    text = answer.content.decode()
    assert "nothing was saved:" in text and said in text
    assert file.read_text() == BROKEN[said]  # the file is as it was
    assert settings.YULLU["dreaming"]["interval"] == before  # and so is this process


def test_settings_over_a_sound_config_file_still_save(
    client: Client, owner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "config.toml"
    file.write_text('# mine\n[dreaming]\ninterval = "30m"\n')
    monkeypatch.setenv("YULLU_CONFIG", str(file))
    monkeypatch.setitem(settings.YULLU, "dreaming", {**settings.YULLU["dreaming"], "interval": "30m"})
    client.force_login(owner)
    assert "what the server read when it started" not in client.get(SETTINGS).content.decode()
    text = client.post(SETTINGS, {"dreaming.interval": "45m"}, follow=True).content.decode()
    assert "Saved [dreaming].interval" in text
    assert file.read_text() == '# mine\n[dreaming]\ninterval = "45m"\n'
