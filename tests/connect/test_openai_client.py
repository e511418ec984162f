"""The OpenAI-compatible endpoint through the `openai` package, streaming and not, against the served app
and the fake provider."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest

from tests.connect.conftest import ONE_STACK, shell, value
from tests.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.needs_memory, pytest.mark.timeout(180), ONE_STACK]


def client(stack: dict[str, Any], token: str = "full", **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{stack['url']}/v1", api_key=stack["tokens"][token], default_headers=headers, max_retries=0
    )


def wait_for(stack: dict[str, Any], code: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = shell(stack, code)
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def memory_block_sent(provider: FakeOpenAIServer) -> str:
    chat = [r for r in provider.requests if not r.get("response_format")][-1]
    return "\n".join(str(m.get("content")) for m in chat["messages"] if m["role"] == "system")


def memory_ids(stack: dict[str, Any], *contents: str) -> set[str]:
    rows = f"Memory.objects.filter(content__in={list(contents)!r}, invalid_at=None)"
    return set(value(stack, "from memory.models import Memory", f"[str(m.pk) for m in {rows}]"))


def test_models_lists_the_configured_model(stack: dict[str, Any]) -> None:
    assert [m.id for m in client(stack).models.list()] == [
        "local-model",
        "fake-model",
    ]  # the default, then the provider's


def test_a_reply_comes_through_with_the_memory_block_and_its_ids(
    stack: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    raw = client(stack, **{"X-Memora-Conversation": "peanuts"}).chat.completions.with_raw_response.create(
        model="local-model", messages=[{"role": "user", "content": "Can I eat peanut butter?"}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Hello from the provider."
    assert "I am allergic to peanuts." in memory_block_sent(provider)
    assert set(raw.headers["x-memora-memories"].split(",")) >= memory_ids(stack, "I am allergic to peanuts.")
    used = value(
        stack,
        "from chat.models import Message\n"
        "m = Message.objects.filter(role='assistant', content='Hello from the provider.').latest('id')",
        "[u.memory.content for u in m.memory_uses.all()]",
    )
    assert "I am allergic to peanuts." in used


def test_streaming_learns_from_the_new_message_and_stores_history_once(stack: dict[str, Any]) -> None:
    api = client(stack, **{"X-Memora-Conversation": "tea"})
    history: list[Any] = [{"role": "user", "content": "I drink green tea every morning."}]
    stream = api.chat.completions.create(model="local-model", messages=history, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)  # type: ignore[union-attr]
    assert text == "Hello from the provider."
    again: list[Any] = [
        *history,
        {"role": "assistant", "content": text},
        {"role": "user", "content": "What should I eat?"},
    ]
    list(api.chat.completions.create(model="local-model", messages=again, stream=True))
    list(api.chat.completions.create(model="local-model", messages=again, stream=True))  # the same history again
    said = value(
        stack,
        "from connect.models import ClientConversation\nc = ClientConversation.objects.get(key='tea').conversation",
        "list(c.messages.filter(role='user').order_by('id').values_list('content', flat=True))",
    )
    assert said == ["I drink green tea every morning.", "What should I eat?"]
    learned = wait_for(
        stack,
        "import json\nfrom memory.models import Memory\n"
        "print('OUT' + json.dumps(Memory.objects.filter(content='I drink green tea every morning.').exists()))",
    )
    assert learned is True


def test_temporary_requests_use_and_learn_nothing(stack: dict[str, Any], provider: FakeOpenAIServer) -> None:
    raw = client(stack, **{"X-Memora-Temporary": "1"}).chat.completions.with_raw_response.create(
        model="local-model",
        messages=[{"role": "user", "content": "I am allergic to peanuts and I like green tea, secretly."}],
    )
    assert raw.parse().choices[0].message.content == "Hello from the provider."
    assert raw.headers["x-memora-memories"] == ""
    assert "allergic" not in memory_block_sent(provider)
    stored = value(
        stack, "from chat.models import Message", "Message.objects.filter(content__contains='secretly').count()"
    )
    assert stored == 0


def test_the_clients_tools_pass_through(stack: dict[str, Any], provider: FakeOpenAIServer) -> None:
    tool: Any = {
        "type": "function",
        "function": {"name": "get_time", "description": "Now", "parameters": {"type": "object", "properties": {}}},
    }
    completion = client(stack).chat.completions.create(
        model="local-model", messages=[{"role": "user", "content": "What time is it?"}], tools=[tool]
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    calls: Any = completion.choices[0].message.tool_calls
    assert calls[0].function.name == "get_time"
    sent = [r for r in provider.requests if r.get("tools")][-1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_time"]


def test_errors_come_in_openais_shape(stack: dict[str, Any]) -> None:
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{stack['url']}/v1", api_key="mem_wrong", max_retries=0).models.list()
    with pytest.raises(openai.PermissionDeniedError) as denied:
        client(stack, "read").chat.completions.create(model="local-model", messages=[{"role": "user", "content": "hi"}])
    assert denied.value.body["code"] == "insufficient_scope"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        client(stack).chat.completions.create(model="gpt-nonexistent", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):
        client(stack).chat.completions.create(model="local-model", messages=[])


def test_reads_are_logged_with_the_user_agent(stack: dict[str, Any]) -> None:
    client(stack).chat.completions.create(
        model="local-model", messages=[{"role": "user", "content": "Any cello concerts?"}]
    )
    log = value(
        stack, "from memory.models import MemoryAccess", "MemoryAccess.objects.filter(kind='v1').latest('at').client"
    )
    assert log.startswith("OpenAI/Python")


def test_a_project_limited_token_chats_in_its_project(stack: dict[str, Any], provider: FakeOpenAIServer) -> None:
    raw = client(stack, "thesis", **{"X-Memora-Conversation": "draft"}).chat.completions.with_raw_response.create(
        model="local-model", messages=[{"role": "user", "content": "When is the thesis due? I live where?"}]
    )
    block = memory_block_sent(provider)
    assert "The thesis is due in June." in block and "I live in Lyon." not in block  # isolated
    used = set(raw.headers["x-memora-memories"].split(","))
    thesis = value(
        stack, "from memory.models import Memory", "[str(m.pk) for m in Memory.objects.filter(project__name='Thesis')]"
    )
    assert memory_ids(stack, "The thesis is due in June.") <= used <= set(thesis)
    project = value(
        stack,
        "from connect.models import ClientConversation",
        "ClientConversation.objects.get(key__endswith=':draft').conversation.project.name",
    )
    assert project == "Thesis"
