"""Walk 21: a team's first day, from fresh clones and clean homes, with real Claude Code and Codex (docs/testing.md)."""

from __future__ import annotations

import pytest

from dreaming.models import SessionMessage
from dreaming.services import record_messages


def turn(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


@pytest.mark.django_db(transaction=True)
def test_a_whole_transcript_sent_after_its_last_turn_is_buffered_in_the_transcripts_order() -> None:
    """The Stop hook sent a session's last exchange, then PreCompact sent the whole transcript: the earlier
    turns, new to the buffer, were added after it, so the dream pass read "Yes. And staging is reset…" before
    the question it answered (walk 21: a session older than the install, compacted)."""
    early = [turn("user", "Refunds are credit notes with their own CN- series?"), turn("assistant", "Yes, CN-<n>.")]
    late = [turn("user", "Yes. And staging is reset nightly at 02:00 UTC."), turn("assistant", "Noted: staging.")]
    record_messages("acme/order", "s1", late)  # Stop: the last exchange
    assert record_messages("acme/order", "s1", early + late)["count"] == 2  # PreCompact: the two new turns only
    record_messages("acme/order", "s1", [turn("user", "A later question?")])  # the next Stop
    buffered = list(SessionMessage.objects.filter(session_id="s1").order_by("id").values_list("content", flat=True))
    assert buffered == [t["content"] for t in early + late] + ["A later question?"]
