"""Embeddings for recall (EMBEDDING_MODEL) against the fake OpenAI-compatible server's /v1/embeddings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import services
from memory.context import BACKGROUND_HEADER
from memory.embeddings import REFERENCE
from memory.models import Memory, MemoryVector
from memory.receivers import on_memories_written
from memory.tasks import embed_memories_task
from tests.fake_openai import FakeOpenAIServer
from tests.helpers import make_memory, make_user
from tests.turns import run_to_end


@pytest.fixture
def embedding_server(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """The fake server's /v1/embeddings as EMBEDDING_BASE_URL; the worker's task runs in place."""
    server = FakeOpenAIServer().start()
    settings.EMBEDDING_MODEL = "fake-embedding"
    settings.EMBEDDING_BASE_URL = server.base_url
    settings.EMBEDDING_API_KEY = "test-key"
    settings.EMBEDDING_TIMEOUT = 0.5
    monkeypatch.setattr(embed_memories_task, "apply_async", lambda args, **kwargs: embed_memories_task(*args))
    try:
        yield server
    finally:
        server.stop()


def _memory_inputs(server: FakeOpenAIServer) -> list[list[str]]:
    """What was embedded, but the reference memories (made once per process and model)."""
    return [r["input"] for r in server.embedding_requests if r["input"] != list(REFERENCE)]


@pytest.mark.django_db
def test_memories_are_embedded_when_written_and_their_vectors_go_with_them(
    user: Any, embedding_server: FakeOpenAIServer, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        memory = services.memory_add(user=user, content="Is allergic to peanuts.")
    assert MemoryVector.objects.filter(memory=memory, model="fake-embedding").exists()
    assert _memory_inputs(embedding_server)[-1] == ["Is allergic to peanuts."]

    with django_capture_on_commit_callbacks(execute=True):
        edited = services.memory_edit(user=user, memory=memory, content="Is allergic to tree nuts.")
    assert MemoryVector.objects.filter(memory=edited).exists()
    assert _memory_inputs(embedding_server)[-1] == ["Is allergic to tree nuts."]

    services.memory_delete(user=user, memory=edited)
    assert not MemoryVector.objects.exists()  # the old version's went with it too


@pytest.mark.django_db
def test_what_an_extraction_run_wrote_is_embedded_after_it_commits(
    user: Any, embedding_server: FakeOpenAIServer, django_capture_on_commit_callbacks: Any
) -> None:
    learned = make_memory(owner=user, content="Plays the cello.")
    with django_capture_on_commit_callbacks(execute=True):
        on_memories_written(sender=Memory, user_id=user.pk, run_id=1, changes=[])
    assert MemoryVector.objects.filter(memory=learned).exists()


@pytest.mark.django_db
def test_without_an_embedding_model_nothing_is_requested(user: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.memory_add(user=user, content="Is allergic to peanuts.")
    assert callbacks == [] and not MemoryVector.objects.exists()


def _blocks(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


async def _embedded_user() -> tuple[Any, Any]:
    user = await sync_to_async(make_user)()
    for content in ("Is allergic to peanuts.", "Plays the cello in an orchestra.", "Works as a nurse."):
        await sync_to_async(make_memory)(owner=user, content=content)
    await sync_to_async(embed_memories_task)(user.pk)
    return user, await sync_to_async(conversation_create)(user=user)


@pytest.mark.django_db(transaction=True)
async def test_a_memory_related_only_in_meaning_is_recalled_with_one_request_per_turn(
    embedding_server: FakeOpenAIServer, fake_model: Any
) -> None:
    user, conversation = await _embedded_user()
    embedding_server.embedding_requests.clear()

    turn = await Turn.begin(user=user, conversation=conversation, content="Can I have a Snickers bar?")
    await run_to_end(turn)

    system = _blocks(fake_model.requests[-1])
    assert BACKGROUND_HEADER in system and "- Is allergic to peanuts." in system
    assert "cello" not in system and "nurse" not in system
    assert _memory_inputs(embedding_server) == [["Can I have a Snickers bar?"]]


@pytest.mark.django_db(transaction=True)
async def test_one_embeddings_request_even_when_a_tool_rebuilds_the_block(
    embedding_server: FakeOpenAIServer, fake_model: Any, register_tool: Any
) -> None:
    from tests.chat.fake_tools import EchoTool

    user, conversation = await _embedded_user()
    embedding_server.embedding_requests.clear()
    tool = register_tool(EchoTool())
    fake_model.call_tool(tool.name, '{"q": "x"}')
    fake_model.reply("Done.")
    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Any satay ideas?"))

    assert len(fake_model.requests) == 2 and "peanuts" in _blocks(fake_model.requests[-1])
    assert len(_memory_inputs(embedding_server)) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("failure", ["error", "slow"])
async def test_a_failing_or_slow_endpoint_leaves_the_turn_answered_lexically(
    embedding_server: FakeOpenAIServer, fake_model: Any, failure: str
) -> None:
    user, conversation = await _embedded_user()
    if failure == "error":
        embedding_server.embedding_status = 500
    else:
        embedding_server.embedding_delay = 5.0

    started = time.monotonic()
    turn = await Turn.begin(user=user, conversation=conversation, content="Peanut snacks for the orchestra tour?")
    event = await run_to_end(turn)

    assert event.type == "done" and time.monotonic() - started < 3
    system = _blocks(fake_model.requests[-1])
    assert "- Is allergic to peanuts." in system and "- Plays the cello in an orchestra." in system


@pytest.mark.django_db(transaction=True)
async def test_a_turns_message_is_embedded_as_the_turn_starts_and_kept_for_the_same_words(
    embedding_server: FakeOpenAIServer, fake_model: Any
) -> None:
    from chat import extensions
    from memory import embeddings

    user, conversation = await _embedded_user()
    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Which orchestra pieces?"))
    embedding_server.embedding_requests.clear()

    extensions.turn_prefetch(user.pk, "Any  satay ideas?")  # what Turn.begin does before saving anything
    embeddings._pending("Any satay ideas?").future.result(timeout=5)
    assert _memory_inputs(embedding_server) == [["Any  satay ideas?"]]  # before the turn started

    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Any satay ideas?"))
    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Any satay ideas?"))

    assert "- Is allergic to peanuts." in _blocks(fake_model.requests[-1])
    assert len(_memory_inputs(embedding_server)) == 1  # the same words: no second request


@pytest.mark.django_db(transaction=True)
async def test_a_greeting_needs_no_embedding(embedding_server: FakeOpenAIServer, fake_model: Any) -> None:
    user, conversation = await _embedded_user()
    embedding_server.embedding_requests.clear()

    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Hi there!"))

    assert _memory_inputs(embedding_server) == []
