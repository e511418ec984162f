"""What learning costs as a user's history grows: 100 user messages sent over an afternoon, in sessions,
against the fake model as the judge on a 4,096-token window. The judge calls and the characters sent stay
within budget, and do not grow between 20 and 500 memories: the judge is shown what matters to its batch
(memory.extraction.shown) and a burst is judged once (memory.extraction.reads.quiet)."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from chat.models import Message
from memory.models import Memory
from tests.helpers import make_conversation, make_user
from tests.memory.chatting import START, Clock, chat, clock_at_start, tasks_recorded

pytestmark = pytest.mark.django_db

TOPICS = ["chess", "sourdough", "kayaking", "pottery", "astronomy", "gardening", "sailing", "archery"]
PLACES = ["Oslo", "Porto", "Kyoto", "Quito", "Dakar", "Hanoi", "Lima", "Riga", "Tunis", "Perth"]
CHATTER = [
    "Can you suggest a weekend plan around {topic} near {place}?",
    "What gear do I need to start {topic}?",
    "How expensive is {topic} in {place}, roughly?",
    "Thanks, and what about the weather in {place} next month?",
    "Which book would you recommend on {topic}?",
    "ok, make it shorter",
    "Compare the two options for me.",
    "I wear glasses, does that matter for {topic}?",
]


def memories_for(owner: Any, count: int) -> None:
    texts = [f"Enjoys {TOPICS[i % 8]} trips, last one near {PLACES[i // 8 % 10]} (note {i})." for i in range(count)]
    Memory.objects.bulk_create(Memory(owner=owner, content=text, origin="added") for text in texts)


def afternoon(user: Any) -> list[tuple[Any, str, datetime]]:
    """100 messages in sessions of 3 to 15, 15 to 45 s apart, with pauses of 2 to 30 minutes between."""
    rng = random.Random(37)
    conversations = [make_conversation(owner=user) for _ in range(6)]
    said: list[tuple[Any, str, datetime]] = []
    at = START
    while len(said) < 100:
        conversation = rng.choice(conversations)
        for _ in range(min(rng.randint(3, 15), 100 - len(said))):
            text = rng.choice(CHATTER).format(topic=rng.choice(TOPICS), place=rng.choice(PLACES))
            said.append((conversation, text, at))
            at += timedelta(seconds=rng.randint(15, 45))
        at += timedelta(minutes=rng.randint(2, 30))
    return said


@pytest.fixture
def clock(monkeypatch: Any, settings: Any) -> Clock:
    return clock_at_start(monkeypatch, settings)


def learn_an_afternoon(
    user: Any, memories: int, fake_model: Any, clock: Clock, sent: Any, capture: Any
) -> tuple[int, int]:
    """The judge calls and the characters sent to the judge for the afternoon of a user with `memories`."""
    memories_for(user, memories)
    before = len(fake_model.judge_requests)
    chat(afternoon(user), sent, clock, capture)
    requests = fake_model.judge_requests[before:]
    shown = [len(re.findall(r"^\[\d+\]", r["messages"][-1]["content"], re.M)) for r in requests]
    assert max(shown) < 100
    assert not Message.objects.filter(user=user, role="user", memory_status="pending").exists()
    return len(requests), sum(len(m["content"]) for r in requests for m in r["messages"])


def test_100_messages_cost_at_most_20_judge_calls_and_100k_characters_and_no_more_at_500_memories_than_at_20(
    fake_model: Any, clock: Clock, monkeypatch: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.MEMORY_CONTEXT_TOKENS, settings.MEMORY_JUDGE_PROMPT = 4096, 0, "auto"
    settings.MEMORY_MAX_ACTIVE = 600
    sent = tasks_recorded(monkeypatch)
    few, many = make_user(username="few"), make_user(username="many")

    calls_few, characters_few = learn_an_afternoon(few, 20, fake_model, clock, sent, django_capture_on_commit_callbacks)
    calls_many, characters_many = learn_an_afternoon(
        many, 500, fake_model, clock, sent, django_capture_on_commit_callbacks
    )

    assert calls_few <= 20 and characters_few <= 100_000
    assert calls_many <= 20 and characters_many <= 100_000
    assert calls_many <= calls_few
