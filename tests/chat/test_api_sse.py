"""POST /api/conversations/{id}/messages as server-sent events, through Django's real ASGI handler."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from accounts.models import User
from accounts.services import api_token_create
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create
from chat.turn.transactions import turn_start
from tests.chat.fake_tools import EchoTool
from tests.fake_openai import FakeOpenAIServer, FakeResponse

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(user: User) -> str:
    return api_token_create(user=user)[1]


class AsgiResponse:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.bodies: list[bytes] = []

    @property
    def body(self) -> bytes:
        return b"".join(self.bodies)

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        return parse_sse(self.body)


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """`event:`/`data:` blocks separated by blank lines, as an EventSource reads them."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def post(
    conversation_id: Any,
    token: str,
    content: str = "Hello",
    *,
    accept: str = "text/event-stream",
    disconnect_after: int | None = None,
) -> AsgiResponse:
    """One request through the ASGI app; with `disconnect_after`, the client leaves after that many events."""
    body = json.dumps({"content": content}).encode()
    path = f"/api/conversations/{conversation_id}/messages"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"accept", accept.encode()),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    response = AsgiResponse()
    gone = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body" and message.get("body"):
            response.bodies.append(message["body"])
            if disconnect_after is not None and len(response.events()) >= disconnect_after:
                gone.set()

    from config.asgi import application  # the project's entry point, as uvicorn serves it

    await asyncio.wait_for(application(scope, receive, send), 20)
    return response


async def test_stream_sends_start_then_deltas_then_done_with_the_saved_message(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    fake_model.reply("Hello ", "from ", "the model")
    response = await post(conversation.id, token)

    assert response.status == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    events = response.events()
    assert [name for name, _ in events] == ["start", "delta", "delta", "delta", "done"]
    start, done = events[0][1], events[-1][1]
    assert start["user_message"]["content"] == "Hello"
    assert start["assistant_message"]["status"] == "streaming"
    assert "".join(data["text"] for name, data in events if name == "delta") == "Hello from the model"
    assert done["assistant_message"]["id"] == start["assistant_message"]["id"]
    assert (done["assistant_message"]["content"], done["assistant_message"]["status"]) == (
        "Hello from the model",
        "complete",
    )
    # Every body message holds whole events (they are never split).
    assert all(parse_sse(body) for body in response.bodies if body)


async def test_events_go_out_as_they_come_and_only_a_backlog_is_sent_together(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    fake_model.reply("Hello ", "from ", "the model", delay=0.05)
    response = await post(conversation.id, token)

    # Paced text: streamed, not buffered, each piece in its own body message as soon as it arrives.
    per_body = [[name for name, _ in parse_sse(body)] for body in response.bodies if body]
    assert per_body[1:4] == [["delta"], ["delta"], ["delta"]]
    assert per_body[0] == ["start"] and per_body[-1][-1] == "done"


async def test_non_ascii_text_streams_intact(fake_model: Any, token: str, conversation: Conversation) -> None:
    fake_model.reply("好的，", "小手机 ", "👍")
    events = (await post(conversation.id, token, content="我一直喜欢小手机")).events()
    assert events[0][1]["user_message"]["content"] == "我一直喜欢小手机"
    assert events[-1][1]["assistant_message"]["content"] == "好的，小手机 👍"
    assert (await Conversation.objects.aget(pk=conversation.pk)).title == "我一直喜欢小手机"


async def test_stream_reports_tool_use(
    fake_model: Any, token: str, conversation: Conversation, register_tool: Any
) -> None:
    register_tool(EchoTool())
    fake_model.call_tool("lookup")
    fake_model.reply("Done")
    events = (await post(conversation.id, token)).events()
    assert [name for name, _ in events] == ["start", "tool", "delta", "done"]
    assert events[1][1] == {"name": "lookup"}


async def test_stream_ends_with_an_error_event_when_the_provider_fails(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    fake_model.fail("Partial", kind="status", message="The model provider answered HTTP 500.")
    events = (await post(conversation.id, token)).events()
    assert [name for name, _ in events] == ["start", "delta", "error"]
    error = events[-1][1]
    assert error["detail"] == "The model provider answered HTTP 500."
    assert (error["assistant_message"]["status"], error["assistant_message"]["content"]) == ("error", "Partial")
    assert await Message.objects.filter(conversation=conversation, role="user", content="Hello").aexists()


async def test_busy_conversation_answers_409_json_instead_of_a_stream(
    fake_model: Any, user: User, token: str, conversation: Conversation
) -> None:
    await sync_to_async(turn_start)(user=user, conversation=conversation, content="Running")
    response = await post(conversation.id, token)
    assert response.status == 409
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert "Another reply" in json.loads(response.body)["detail"]
    assert await Message.objects.filter(conversation=conversation).acount() == 2


async def test_bad_input_answers_422_json_instead_of_a_stream(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    response = await post(conversation.id, token, content="   ")
    assert response.status == 422
    body = json.loads(response.body)
    assert "Must not be blank" in body["detail"] and body["errors"][0]["loc"] == ["body", "content"]
    assert await Message.objects.acount() == 0


async def test_another_users_conversation_is_404_for_the_stream_too(
    fake_model: Any, token: str, other_user: User
) -> None:
    theirs = await sync_to_async(conversation_create)(user=other_user)
    response = await post(theirs.id, token)
    assert response.status == 404
    assert await Message.objects.acount() == 0


async def test_json_mode_through_asgi_returns_both_messages(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    response = await post(conversation.id, token, accept="application/json")
    assert response.status == 200
    body = json.loads(response.body)
    assert (body["user_message"]["content"], body["assistant_message"]["content"]) == ("Hello", "ok")


async def test_a_client_that_disconnects_mid_stream_does_not_stop_the_reply(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    fake_model.reply("One ", "two ", "three", delay=0.1)
    response = await post(conversation.id, token, disconnect_after=2)  # start, the first delta
    assert [name for name, _ in response.events()] == ["start", "delta"]

    for _ in range(100):
        assistant = await Message.objects.aget(conversation=conversation, role="assistant")
        if assistant.status != "streaming":
            break
        await asyncio.sleep(0.05)
    assert (assistant.status, assistant.content) == ("complete", "One two three")
    assert (await Conversation.objects.aget(pk=conversation.pk)).lock_token is None
    assert (await post(conversation.id, token, accept="application/json")).status == 200


async def stop(conversation_id: Any, token: str) -> int:
    from django.test import AsyncClient

    response = await AsyncClient().post(
        f"/api/conversations/{conversation_id}/stop", headers={"Authorization": f"Bearer {token}"}
    )
    return int(response.status_code)


async def test_stop_ends_the_stream_and_saves_the_reply_interrupted(
    token: str, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_BACKEND = "tests.chat.fake_tools.StallingModel"
    streaming = asyncio.create_task(post(conversation.id, token))
    for _ in range(100):
        if await Message.objects.filter(conversation=conversation, role="assistant", content="Partial ").aexists():
            break
        await asyncio.sleep(0.05)  # the partial text is saved about once a second
    assert await stop(conversation.id, token) == 204
    events = (await streaming).events()

    assert [name for name, _ in events] == ["start", "delta", "error"]
    assert events[-1][1]["assistant_message"]["status"] == "interrupted"
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    assert (assistant.status, assistant.content) == ("interrupted", "Partial")
    assert (await Conversation.objects.aget(pk=conversation.pk)).lock_token is None


async def test_stop_with_no_reply_running_is_204_and_another_users_conversation_404(
    token: str, conversation: Conversation, other_user: User
) -> None:
    assert await stop(conversation.id, token) == 204
    theirs = await sync_to_async(conversation_create)(user=other_user)
    assert await stop(theirs.id, token) == 404


# --- the same stream over the OpenAI adapter and a local OpenAI-compatible server ---


async def test_stream_through_the_openai_adapter(
    fake_openai: FakeOpenAIServer, token: str, conversation: Conversation
) -> None:
    fake_openai.queue(FakeResponse("Streamed by the fake provider."))
    events = (await post(conversation.id, token, content="Hi provider")).events()
    assert (events[0][0], events[-1][0]) == ("start", "done")
    assert "".join(d["text"] for n, d in events if n == "delta") == "Streamed by the fake provider."
    request = fake_openai.requests[0]
    assert request["stream"] is True
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][-1] == {"role": "user", "content": "Hi provider"}
    state = await AgentState.objects.aget(conversation=conversation)
    assert state.context[-1] == {"role": "assistant", "content": "Streamed by the fake provider."}


async def test_provider_timeout_through_the_adapter_ends_in_an_error_event(
    fake_openai: FakeOpenAIServer, token: str, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 0.3
    fake_openai.queue(FakeResponse(chunks=["Half"], hang=True), FakeResponse("Recovered."))
    events = (await post(conversation.id, token)).events()
    assert [name for name, _ in events] == ["start", "delta", "error"]
    assert events[-1][1]["detail"] == "The model provider timed out."
    assert events[-1][1]["assistant_message"]["content"] == "Half"
    # The conversation stays usable, and the next request carries the partial reply as context.
    events = (await post(conversation.id, token, content="Again")).events()
    assert events[-1][0] == "done"
    assert {"role": "assistant", "content": "Half [reply cut short]"} in fake_openai.requests[1]["messages"]


async def test_streamed_messages_are_shaped_like_the_json_routes(
    fake_model: Any, token: str, conversation: Conversation
) -> None:
    fake_model.reply("Hi")
    done = (await post(conversation.id, token)).events()[-1][1]
    listed = await post_json_list(conversation.id, token)
    assert done["user_message"] == listed[0]
    assert done["assistant_message"] == listed[1]


async def post_json_list(conversation_id: Any, token: str) -> list[dict[str, Any]]:
    from django.test import AsyncClient

    response = await AsyncClient().get(
        f"/api/conversations/{conversation_id}/messages", headers={"Authorization": f"Bearer {token}"}
    )
    return list(response.json())
