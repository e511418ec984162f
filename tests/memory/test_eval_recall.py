"""`manage.py eval_recall`: the recall golden set, by words alone, with the embedded model (offline), and
against an embeddings endpoint."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory.evals.recall_set import ACCEPTANCE, MAX_CHARS_PER_TURN, MAX_UNPINNED_PER_TURN, SIZES, load, user_memories
from tests.fake_openai import FakeOpenAIServer


def run(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("eval_recall", "--json", *args, stdout=out)
    return dict(json.loads(out.getvalue())["results"])


def test_the_set_is_bilingual_has_every_group_and_makes_users_of_50_and_300_memories() -> None:
    recall_set = load()
    languages = {c.id.split("-")[0] for c in recall_set.cases}
    assert languages == {"en", "zh"}
    meaning = [c for c in recall_set.cases if c.group == "meaning"]
    assert len(meaning) >= 30 and sum(c.id.startswith("zh") for c in meaning) * 2 >= len(meaning)
    assert sum(c.group == "topic" for c in recall_set.cases) >= 8
    assert sum(c.group == "stale" for c in recall_set.cases) >= 4
    for size in SIZES:
        for case in recall_set.cases:
            memories, names = user_memories(recall_set, size, keep=case.relevant)
            assert len(memories) == size and len({m.content for m in memories}) == size
            assert {m.id for m in memories} >= {names[name] for name in case.relevant}


def test_lexical_recall_is_high_and_turns_carry_at_most_half_of_the_previous_policy(settings: Any) -> None:
    settings.EMBEDDING_MODEL = "off"
    results = run("--min-recall", "0.9")
    assert "300/embedded" not in "".join(results)
    ours, previous = results["300/lexical"], results["300/previous (newest first)"]
    assert ours["recall_lexical"] >= 0.95 and ours["recall_topic"] >= 0.9
    assert ours["chars_per_turn"] * 2 <= previous["chars_per_turn"]
    assert ours["greeting_unpinned_max"] == 0
    assert previous["recall_lexical"] < 0.5  # the oldest memories were left out by age
    assert previous["recall_stale"] == 0  # its block never says how old a memory is


def test_min_recall_fails_the_command(settings: Any) -> None:
    settings.EMBEDDING_MODEL = "off"
    with pytest.raises(CommandError):
        run("--min-recall", "1.01")


def test_with_the_embedded_model_offline_recall_meets_the_bar_at_50_and_300_memories(settings: Any) -> None:
    settings.EMBEDDING_MODEL = ""  # the embedded model: no server, nothing downloaded
    results = run("--check")  # raises CommandError below the bar
    for size in SIZES:
        ours = next(r for name, r in results.items() if name.startswith(f"{size}/embedded"))
        for name, minimum in ACCEPTANCE.items():
            assert ours[name] >= minimum, (size, name)
        assert ours["greeting_unpinned_max"] == 0
        assert ours["recall_meaning"] > results[f"{size}/lexical"]["recall_meaning"] + 0.5
    largest = next(r for name, r in results.items() if name.startswith(f"{SIZES[-1]}/embedded"))
    assert largest["memory_chars_per_turn"] <= MAX_CHARS_PER_TURN
    assert largest["unpinned_per_turn"] <= MAX_UNPINNED_PER_TURN


def test_with_embeddings_against_an_endpoint_meaning_only_cases_are_found() -> None:
    with FakeOpenAIServer() as server:
        results = run("--model", "fake-embedding", "--base-url", server.base_url, "--api-key", "k")
    embedded = results["300/embedded (fake-embedding)"]
    assert embedded["recall_lexical"] >= 0.9
    assert embedded["recall_meaning"] > results["300/lexical"]["recall_meaning"]
