"""What the judge is shown of the user's memories (memory.extraction.shown): the ones that matter to its batch,
bounded in number and in share of the window, while validation still knows every active memory."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chat.llm.tokens import estimate_text
from chat.models import Message
from memory.extraction import batching, judge, shown
from memory.extraction.judge import PendingMessage
from memory.models import ExtractionRun, Memory
from memory.recall import Candidate
from tests.helpers import make_memory, run, say

pytestmark = pytest.mark.django_db

HOBBIES = [
    "watercolour", "chess", "bouldering", "birdwatching", "origami", "kayaking", "pottery", "calligraphy",
    "beekeeping", "fencing", "sailing", "archery", "knitting", "gardening", "astronomy", "woodworking",
    "skateboarding", "ceramics", "photography", "juggling",
]  # fmt: skip
PLACES = [
    "Oslo", "Porto", "Kyoto", "Quito", "Dakar", "Hanoi", "Lima", "Riga", "Tunis", "Perth", "Cork", "Bergen",
    "Malmo", "Graz", "Split", "Ghent", "Turku", "Bari", "Leon", "Pune", "Cusco", "Sintra", "Nara", "Hoi",
    "Bled",
]  # fmt: skip


def filler_memories(owner: Any, count: int) -> list[Memory]:
    """`count` distinct memories, each about one hobby and one place."""
    texts = [f"Took up {HOBBIES[i % 20]} during a stay in {PLACES[i // 20 % 25]}." for i in range(count)]
    rows = [Memory(owner=owner, content=text, origin="added") for text in texts]
    return Memory.objects.bulk_create(rows)


def ids_shown(request: dict[str, Any]) -> set[int]:
    return {int(pk) for pk in re.findall(r"^\[(\d+)\]", request["messages"][-1]["content"], re.M)}


def small_window(settings: Any, tokens: int = 4096) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.MEMORY_CONTEXT_TOKENS = tokens, 0
    settings.MEMORY_JUDGE_MAX_TOKENS, settings.MEMORY_JUDGE_PROMPT = 2000, "auto"


def test_at_500_memories_the_judge_sees_the_relevant_pinned_and_touched_keyed_ones_not_all(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    small_window(settings)
    filler_memories(user, 500)
    pinned = make_memory(owner=user, content="Is allergic to peanuts.", pinned=True)
    language = make_memory(owner=user, content="Prefers replies in English.", key="reply_language")
    make_memory(owner=user, content="Prefers metric units.", key="units")
    old_news = Memory.objects.filter(owner=user, content__contains="beekeeping").order_by("id").first()
    assert old_news is not None
    for i in range(12):  # newer memories, so the beekeeping ones are not among the newest
        make_memory(owner=user, content=f"Reads science fiction series number {i}.")
    said = say(conversation, "Any tips for beekeeping in a windy garden? I would rather read answers in French.")

    run(user, up_to=said, trigger="manual")

    (request,) = fake_model.judge_requests
    seen = ids_shown(request)
    assert {old_news.pk, pinned.pk, language.pk} <= seen
    assert not Memory.objects.filter(pk__in=seen, key="units").exists()
    assert len(seen) < 100
    memory_lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[")]
    assert sum(estimate_text(line) + 1 for line in memory_lines) <= 0.4 * batching.window()


def test_no_judge_request_shows_100_memories_however_many_are_relevant(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    filler_memories(user, 400)
    said = say(conversation, " ".join(f"{h} in {p}?" for h, p in zip(HOBBIES, PLACES, strict=False)))

    run(user, up_to=said, trigger="manual")

    (request,) = fake_model.judge_requests
    assert 50 <= len(ids_shown(request)) < 100


def test_an_update_of_a_memory_the_judge_was_not_shown_is_dropped_with_a_reason(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    unshown = filler_memories(user, 60)[0]
    said = say(conversation, "What should I cook tonight?")
    fake_model.judge({"operations": [{"op": "update", "id": unshown.pk, "content": "Took up rowing.", "sources": [1]}]})

    run(user, up_to=said, trigger="manual")

    assert unshown.pk not in ids_shown(fake_model.judge_requests[0])
    (dropped,) = run_dropped(user)
    assert dropped["reason"] == f"memory {unshown.pk} was not shown to the judge"
    assert Memory.objects.get(pk=unshown.pk).invalid_at is None
    assert Message.objects.get(pk=said.pk).memory_status == "processed"


def run_dropped(user: Any) -> list[dict[str, Any]]:
    run_record = ExtractionRun.objects.filter(owner=user).latest("id")
    return list(run_record.dropped_ops)


def test_validation_still_knows_the_memories_the_judge_was_not_shown(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    unshown = filler_memories(user, 60)[0]
    city = make_memory(owner=user, content="Lives in Graz.", key="home_city")
    for i in range(12):
        make_memory(owner=user, content=f"Reads science fiction series number {i}.")
    said = say(conversation, "What should I cook tonight?")
    fake_model.judge(
        {
            "operations": [
                {"op": "add", "content": unshown.content, "sources": [1]},
                {"op": "add", "content": "Lives in Vienna.", "sources": [1], "key": "home_city"},
            ]
        }
    )

    run(user, up_to=said, trigger="manual")

    assert not {unshown.pk, city.pk} & ids_shown(fake_model.judge_requests[0])
    reasons = [op["reason"] for op in run_dropped(user)]
    assert reasons == [f"the same content as active memory {unshown.pk}"]
    city.refresh_from_db()
    assert city.invalid_at is not None and city.superseded_by is not None
    assert city.superseded_by.content == "Lives in Vienna."


def test_a_request_to_forget_shows_the_judge_more_than_the_newest_few(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    job = make_memory(owner=user, content="Works as a nurse.")
    filler_memories(user, 40)
    said = say(conversation, "Please forget what you know about my job.")

    run(user, up_to=said, trigger="manual")

    seen = ids_shown(fake_model.judge_requests[0])
    assert job.pk in seen and len(seen) == 41


def test_a_change_of_mind_shows_the_memory_about_the_same_preference(user: Any) -> None:
    memories = [Candidate(1, "Lives in Lyon."), *(Candidate(i, f"Enjoys hobby number {i}.") for i in range(2, 40))]
    pending = [PendingMessage(1, "c", "Quick update: I moved to Berlin last month.")]

    chosen = shown.choose(user_id=user.pk, memories=memories, pending=pending, budget=10_000)

    assert 1 in {m.id for m in chosen} and len(chosen) == 1 + shown.SHOWN_NEWEST


def test_with_500_memories_a_batch_on_a_4k_window_still_covers_many_messages(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MAX_ACTIVE = 600
    small_window(settings)
    filler_memories(user, 500)
    said = [say(conversation, f"Is {p} nice in spring for a short city break?") for p in PLACES[:10]]

    run(user, up_to=said[-1], trigger="manual")

    assert len(fake_model.judge_requests) == 1
    assert set(Message.objects.filter(pk__in=[m.pk for m in said]).values_list("memory_status", flat=True)) == {
        "processed"
    }


@pytest.mark.parametrize(("messages", "memories"), [(6, 20), (40, 20)])
def test_at_default_settings_the_judge_request_beyond_the_users_own_text_is_lean(
    fake_model: Any, user: Any, conversation: Any, other_conversation: Any, messages: int, memories: int
) -> None:
    kept = filler_memories(user, memories)
    said = [
        say((conversation, other_conversation)[i // 3 % 2], f"Message {i}: chess in Oslo?") for i in range(messages)
    ]

    run(user, up_to=said[-1], trigger="manual")

    (request,) = fake_model.judge_requests
    assert request["messages"][0]["content"] == judge.judge_prompt() and len(judge.judge_prompt()) <= 4500
    total = sum(len(m["content"]) for m in request["messages"])
    shown = ids_shown(request)
    own_text = sum(len(m.content) for m in said) + sum(len(m.content) for m in kept if m.pk in shown)
    assert total - own_text <= 4900
