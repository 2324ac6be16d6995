"""Acknowledgements that carry no question: recall skips them (no embedder call, no hook output).

Standard library only: the `yullu inject` hook imports this.
"""

import re

ACKNOWLEDGEMENTS = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "thanks",
        "thank you",
        "thx",
        "ty",
        "yes",
        "y",
        "yep",
        "yeah",
        "no",
        "nope",
        "continue",
        "go on",
        "go ahead",
        "sure",
        "cool",
        "great",
        "nice",
        "done",
        "next",
        "proceed",
        "lgtm",
        "perfect",
        "got it",
        "sounds good",
        "please",
        "hi",
        "hello",
        "hey",
        "ack",
        "right",
        "correct",
        "good",
        "fine",
        "alright",
        "agreed",
        "do it",
        "please do",
        "yes please",
        "ok thanks",
        "okay thanks",
        "looks good",
    }
)


def normalise(text: str) -> str:
    """Lowercase, strip `.!?,` and surrounding space (the trivial-query rule, docs/contract.md §4)."""
    return re.sub(r"[.!?,]", "", text.lower()).strip()


def is_acknowledgement(text: str) -> bool:
    cleaned = normalise(text)
    return not cleaned or cleaned in ACKNOWLEDGEMENTS
