"""`manage.py eval_recall`: the recall golden set, offline (lexical) and against an embeddings endpoint."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory.evals.recall_set import load, user_memories
from tests.fake_openai import FakeOpenAIServer


def run(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("eval_recall", "--json", *args, stdout=out)
    return dict(json.loads(out.getvalue())["results"])


def test_the_set_is_bilingual_and_makes_users_of_50_and_300_memories() -> None:
    recall_set = load()
    languages = {c.id.split("-")[0] for c in recall_set.cases}
    assert languages == {"en", "zh"}
    for size in (50, 300):
        memories, names = user_memories(recall_set, size)
        assert len(memories) == size and len({m.content for m in memories}) == size
        assert set(names) >= {name for case in recall_set.cases for name in case.relevant}


def test_lexical_recall_is_high_and_turns_carry_at_most_half_of_the_previous_policy() -> None:
    results = run("--min-recall", "0.9")
    ours, previous = results["300/relevance (lexical)"], results["300/previous (newest first)"]
    assert ours["recall_lexical"] >= 0.9
    assert ours["chars_per_turn"] * 2 <= previous["chars_per_turn"]
    assert ours["greeting_chars_max"] <= 1000
    assert previous["recall_lexical"] < 0.5  # the oldest memories were left out by age


def test_min_recall_fails_the_command() -> None:
    with pytest.raises(CommandError):
        run("--min-recall", "1.01")


def test_with_embeddings_against_an_endpoint_meaning_only_cases_are_found() -> None:
    with FakeOpenAIServer() as server:
        results = run("--embeddings", "--model", "fake-embedding", "--base-url", server.base_url, "--api-key", "k")
    embedded = results["300/relevance (with embeddings)"]
    assert embedded["recall_lexical"] >= 0.9
    assert embedded["recall_meaning"] > results["300/relevance (lexical)"]["recall_meaning"]
