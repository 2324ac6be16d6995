"""entities.py: the product names a short question shares with a memory (what the gate's entity-only
feature masks), and the texts read without them."""

from __future__ import annotations

from memories.search import entities

REDIS = "We use Redis only as the Celery broker and cache; it is not a source of truth."


def test_a_product_the_thesaurus_lists_is_a_name_both_texts_must_hold() -> None:
    assert entities.shared("is redis single threaded", REDIS) == ["redis"]
    assert entities.shared("is postgres single threaded", REDIS) == []  # the memory does not name it
    actions = entities.shared("how do github actions cache", "We deploy from GitHub Actions.")
    assert actions == ["actions", "github", "github actions"]  # the product, and each word written as a name


def test_a_word_the_memory_writes_as_a_name_is_one() -> None:
    twilio = "Reminder handlers call Twilio with a 10 s timeout; the AWS SDK retries, DynamoDB stores state."
    assert entities.shared("twilio sms character limit", twilio) == ["twilio"]
    assert entities.shared("mock aws sdk v3", twilio) == ["aws", "sdk"]
    assert entities.shared("dynamodb ttl units", twilio) == ["dynamodb"]


def test_a_sentence_or_a_speakers_first_word_is_not_a_name() -> None:
    assert entities.shared("reminder timeout", "Reminder handlers retry. Timeout is 10 s.") == []
    assert entities.shared("what did caroline paint", "Melanie: Caroline, I painted a lake.") == []


def test_masked_reads_both_texts_without_the_names() -> None:
    assert entities.masked(REDIS, ["redis"]) == REDIS.replace("Redis", "it")
    assert entities.masked("is redis single threaded", ["redis"]) == "is it single threaded"
    assert entities.masked("no names here", []) == "no names here"
