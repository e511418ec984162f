"""The chat WebSocket, through the real ASGI app (origin check > session auth > routes)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing.websocket import WebsocketCommunicator  # (the package __init__ needs daphne)
from django.conf import settings as django_settings
from django.test import Client

from chat import consumers, push
from chat.llm import ChatModel, StreamChunk, TextDelta
from chat.models import Conversation, Message
from chat.turn import fanout, registry, runner
from config.asgi import application
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = b"http://localhost"


class HoldingModel(ChatModel):
    """Streams one chunk, then holds until cancelled: a reply caught mid-stream, deterministically."""

    label = "Holding test model"

    async def stream(
        self, *, messages: Any, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        yield TextDelta("Partial answer")
        await asyncio.sleep(3600)

    def complete_json(self, **kwargs: Any) -> str:
        return '{"operations": []}'


class PausingModel(ChatModel):
    """Streams a sentence, waits for `resume`, then ends the reply."""

    label = "Pausing test model"
    resume: asyncio.Event

    async def stream(
        self, *, messages: Any, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        yield TextDelta("Before you came. ")
        await type(self).resume.wait()
        yield TextDelta("After.")

    def complete_json(self, **kwargs: Any) -> str:
        return '{"operations": []}'


@pytest.fixture(autouse=True)
async def _turns_stopped_after_each_test() -> AsyncIterator[None]:
    """Replies a test left running are stopped and saved with its event loop, as a server does on exit."""
    yield
    await runner.shutdown()


@pytest.fixture
def holding_model(settings: Any) -> None:
    settings.LLM_BACKEND = "tests.chat.test_consumers.HoldingModel"


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


async def open_socket(user: Any, conversation: Conversation, *, origin: bytes = ORIGIN) -> WebsocketCommunicator:
    headers = [(b"origin", origin), (b"host", b"localhost")]
    if user is not None:
        cookie = await database_sync_to_async(_session_cookie)(user)
        headers.append((b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, f"/ws/c/{conversation.pk}/", headers=headers)


async def connected(user: Any, conversation: Conversation) -> WebsocketCommunicator:
    """An open page's socket, past its first frame (the page is live; the reply so far, if one is running)."""
    socket = await open_socket(user, conversation)
    ok, code = await socket.connect()
    assert ok, code
    socket.first_frame = await socket.receive_from(timeout=5)  # type: ignore[attr-defined]
    assert 'id="turn-live"' in socket.first_frame  # type: ignore[attr-defined]
    return socket


async def receive_until(socket: WebsocketCommunicator, done: Callable[[str], bool]) -> list[str]:
    frames: list[str] = []
    while True:
        frames.append(await socket.receive_from(timeout=5))
        if done(frames[-1]):
            return frames


def idle(frame: str) -> bool:
    return 'data-state="idle"' in frame


async def send(socket: WebsocketCommunicator, content: str) -> None:
    # What htmx's ws extension sends: the form's values plus the request headers.
    await socket.send_to(
        text_data=json.dumps({"action": "send", "content": content, "HEADERS": {"HX-Request": "true"}})
    )


def delta_text(frames: list[str]) -> str:
    return "".join(m for f in frames for m in re.findall(r'beforeend:#message-\d+-text">(.*?)</span>', f, re.S))


@pytest.fixture
def alice(user: Any) -> Any:
    """The user, by the name these tests give her (the shared `conversation` is hers)."""
    return user


async def test_anonymous_socket_is_refused(conversation: Conversation) -> None:
    socket = await open_socket(None, conversation)
    ok, code = await socket.connect()
    assert not ok
    assert code == consumers.CLOSE_UNAUTHENTICATED


async def test_another_users_conversation_is_refused_like_a_missing_one(conversation: Conversation) -> None:
    mallory = await database_sync_to_async(UserFactory)(username="mallory")
    socket = await open_socket(mallory, conversation)
    ok, code = await socket.connect()
    assert not ok
    assert code == consumers.CLOSE_NOT_FOUND


async def test_a_page_from_another_origin_is_refused(alice: Any, conversation: Conversation) -> None:
    socket = await open_socket(alice, conversation, origin=b"https://evil.example")
    ok, _ = await socket.connect()
    assert not ok


async def test_a_turn_shows_the_user_message_then_streams_deltas_then_the_saved_reply(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.reply("Hello", ", ", "**world**")
    socket = await connected(alice, conversation)
    await send(socket, "Hi <b>there</b>")
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    user_message, reply = [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]
    assert f'id="message-{user_message.pk}"' in frames[0]
    assert "Hi &lt;b&gt;there&lt;/b&gt;" in frames[0]  # user text is escaped
    assert 'data-state="streaming"' in frames[0]
    assert delta_text(frames[1:-1]) == "Hello, **world**"
    assert f'id="message-{reply.pk}"' in frames[-1]
    assert "<strong>world</strong>" in frames[-1]  # the final reply is rendered Markdown
    assert reply.status == Message.Status.COMPLETE
    assert reply.content == "Hello, **world**"


async def test_deltas_are_batched(alice: Any, conversation: Conversation, fake_model: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(registry, "FLUSH_SECONDS", 3600)
    fake_model.reply(*[f"w{i} " for i in range(20)], delay=0.005)
    socket = await connected(alice, conversation)
    await send(socket, "Count")
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    deltas = [f for f in frames if "beforeend:#message-" in f and '-text">' in f]
    assert len(deltas) == 2  # the first piece at once, the rest in one batch
    assert delta_text(deltas) == "".join(f"w{i} " for i in range(20))


async def test_stop_saves_the_partial_reply_as_interrupted(
    alice: Any, conversation: Conversation, holding_model: None
) -> None:
    socket = await connected(alice, conversation)
    await send(socket, "Tell me a long story")
    await receive_until(socket, lambda f: "Partial answer" in f)
    await socket.send_json_to({"action": "stop"})
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    reply = await Message.objects.aget(conversation=conversation, role=Message.Role.ASSISTANT)
    assert reply.status == Message.Status.INTERRUPTED
    assert reply.content == "Partial answer"
    assert "is-interrupted" in frames[-1]
    assert "Stopped" in frames[-1]


async def wait_for_reply(conversation: Conversation, *statuses: str, seconds: float = 10) -> Message:
    for _ in range(int(seconds / 0.05)):
        reply = await Message.objects.filter(conversation=conversation, role="assistant").alast()
        if reply is not None and reply.status in statuses:
            return reply
        await asyncio.sleep(0.05)
    raise AssertionError(f"the reply did not become {statuses}")


async def test_closing_the_page_mid_reply_lets_the_reply_finish_and_be_saved(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.reply("One ", "two ", "three ", "four", delay=0.1)
    socket = await connected(alice, conversation)
    await send(socket, "Hello")
    await receive_until(socket, lambda f: "One" in f)
    await socket.disconnect()

    reply = await wait_for_reply(conversation, Message.Status.COMPLETE)
    assert reply.content == "One two three four"
    assert (await Conversation.objects.aget(pk=conversation.pk)).lock_token is None


async def test_two_tabs_see_the_same_stream_and_either_can_stop_it(
    alice: Any, conversation: Conversation, holding_model: None
) -> None:
    first = await connected(alice, conversation)
    second = await connected(alice, conversation)
    await send(first, "Tell me a long story")
    seen_first = await receive_until(first, lambda f: "Partial answer" in f)
    seen_second = await receive_until(second, lambda f: "Partial answer" in f)
    assert 'data-state="streaming"' in seen_second[0]  # the other tab shows Stop too
    assert "Tell me a long story" in seen_first[0] and "Tell me a long story" in seen_second[0]

    await second.send_json_to({"action": "stop"})
    ends = [await receive_until(tab, idle) for tab in (first, second)]
    await first.disconnect()
    await second.disconnect()

    reply = await Message.objects.aget(conversation=conversation, role=Message.Role.ASSISTANT)
    assert (reply.status, reply.content) == (Message.Status.INTERRUPTED, "Partial answer")
    assert all("is-interrupted" in frames[-1] for frames in ends)


async def test_a_page_opened_mid_reply_shows_the_text_so_far_and_keeps_streaming(
    alice: Any, conversation: Conversation, settings: Any
) -> None:
    PausingModel.resume = gate = asyncio.Event()
    settings.LLM_BACKEND = "tests.chat.test_consumers.PausingModel"
    first = await connected(alice, conversation)
    await send(first, "Hi")
    await receive_until(first, lambda f: "came." in f)
    reply = await wait_for_reply(conversation, Message.Status.STREAMING)
    for _ in range(60):  # saved about once a second while it streams
        await reply.arefresh_from_db()
        if reply.content:
            break
        await asyncio.sleep(0.05)
    assert reply.content == "Before you came. "

    late = await connected(alice, conversation)
    gate.set()
    frames = [late.first_frame, *await receive_until(late, idle)]  # type: ignore[attr-defined]
    await first.disconnect()
    await late.disconnect()

    assert "Before you came." in frames[0] and 'data-state="streaming"' in frames[0]
    assert "After." in frames[-1] and "is-complete" in frames[-1]


async def test_a_second_send_while_a_reply_streams_is_refused_as_busy(
    alice: Any, conversation: Conversation, holding_model: None
) -> None:
    socket = await connected(alice, conversation)
    await send(socket, "First")
    await receive_until(socket, lambda f: "Partial answer" in f)
    await send(socket, "Second")
    busy = await socket.receive_from(timeout=5)
    await socket.disconnect()

    assert "Another reply is still being written" in busy
    assert 'hx-swap-oob="beforeend"' in busy and "notice-error" in busy
    assert "role=" not in busy  # the notices area is the page's one live region for notices
    assert await Message.objects.filter(conversation=conversation, role=Message.Role.USER).acount() == 1


async def test_a_send_from_another_tab_while_a_reply_streams_is_refused_as_busy(
    alice: Any, conversation: Conversation, holding_model: None
) -> None:
    first = await connected(alice, conversation)
    await send(first, "First")
    await receive_until(first, lambda f: "Partial answer" in f)
    second = await connected(alice, conversation)
    await send(second, "Second")
    busy = (await receive_until(second, lambda f: "Another reply" in f))[-1]
    await second.disconnect()
    await first.disconnect()

    assert "Another reply is still being written" in busy
    assert 'data-state="rejected"' in busy  # the page gives the text back
    assert await Message.objects.filter(conversation=conversation, role=Message.Role.USER).acount() == 1


async def test_an_empty_message_is_refused_and_nothing_is_saved(alice: Any, conversation: Conversation) -> None:
    socket = await connected(alice, conversation)
    await send(socket, "   ")
    frame = await socket.receive_from(timeout=5)
    await socket.disconnect()

    assert "Message content is empty." in frame
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_a_provider_error_is_shown_in_place_with_a_retry(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.fail("Half a ", message="The model provider timed out.")
    socket = await connected(alice, conversation)
    await send(socket, "Are you there?")
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    reply = await Message.objects.aget(conversation=conversation, role=Message.Role.ASSISTANT)
    assert reply.status == Message.Status.ERROR
    assert f'id="message-{reply.pk}"' in frames[-1]
    assert "is-error" in frames[-1]
    assert "The model provider timed out." in frames[-1]
    # Retry names the reply to write again; it does not send the message a second time.
    assert 'name="action" value="retry"' in frames[-1]
    assert f'name="message_id" value="{reply.pk}"' in frames[-1]
    assert 'name="content"' not in frames[-1]
    assert ">Retry<" in frames[-1]


async def retry(socket: WebsocketCommunicator, message_id: int) -> None:
    # What the Retry form sends through htmx's ws extension: its hidden fields, as strings.
    await socket.send_to(
        text_data=json.dumps({"action": "retry", "message_id": str(message_id), "HEADERS": {"HX-Request": "true"}})
    )


async def test_retry_after_an_error_writes_the_same_reply_again_in_place(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.fail("Half a ", message="The model provider timed out.")
    fake_model.reply("Back again")
    socket = await connected(alice, conversation)
    await send(socket, "Are you there?")
    await receive_until(socket, idle)
    failed = await Message.objects.aget(conversation=conversation, role=Message.Role.ASSISTANT)
    await retry(socket, failed.pk)
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    # The page swaps the failed bubble for the new reply; the user's message is not shown again.
    assert f'<article id="message-{failed.pk}"' in frames[0] and "beforeend:#messages" not in frames[0]
    assert "Back again" in frames[-1]
    messages = [(m.role, m.status, m.content) async for m in Message.objects.filter(conversation=conversation)]
    assert messages == [("user", "complete", "Are you there?"), ("assistant", "complete", "Back again")]
    assert (await Message.objects.aget(role="assistant", conversation=conversation)).pk == failed.pk
    # The model saw the question once, without the failed attempt's partial answer.
    sent = fake_model.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["Are you there?"]
    assert not [m for m in sent if m["role"] == "assistant"]


async def test_retry_of_a_reply_that_is_not_the_failed_latest_is_refused(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.reply("Fine")
    socket = await connected(alice, conversation)
    await send(socket, "Hi")
    await receive_until(socket, idle)
    reply = await Message.objects.aget(conversation=conversation, role=Message.Role.ASSISTANT)
    await retry(socket, reply.pk)
    frame = await socket.receive_from(timeout=5)
    await socket.send_to(text_data=json.dumps({"action": "retry", "message_id": "not a number"}))
    malformed = await socket.receive_from(timeout=5)
    await socket.disconnect()

    assert "Only the latest reply can be retried" in frame and 'data-state="rejected"' in frame
    assert "Retry needs the id of the reply" in malformed
    assert await Message.objects.filter(conversation=conversation).acount() == 2
    assert (await Message.objects.aget(pk=reply.pk)).content == "Fine"


async def test_a_notice_sent_to_the_users_group_reaches_the_page(alice: Any, conversation: Conversation) -> None:
    socket = await connected(alice, conversation)
    await get_channel_layer().group_send(
        consumers.user_group(alice.pk), {"type": "memory.notice", "html": '<div class="notice">Memory updated</div>'}
    )
    frame = await socket.receive_from(timeout=5)
    await socket.disconnect()

    assert 'id="notices" hx-swap-oob="beforeend"' in frame
    assert "Memory updated" in frame


async def test_a_change_to_the_list_makes_every_page_ask_for_its_list_and_its_own_page_for_the_title(
    alice: Any, conversation: Conversation
) -> None:
    other = await Conversation.objects.acreate(owner=alice, title="Other")
    own_page, other_page = await connected(alice, conversation), await connected(alice, other)
    event = {"type": "chat.sidebar", "conversation_id": str(conversation.pk)}
    await get_channel_layer().group_send(consumers.user_group(alice.pk), event)
    own, elsewhere = await own_page.receive_from(timeout=5), await other_page.receive_from(timeout=5)
    await own_page.disconnect()
    await other_page.disconnect()

    assert f"/c/list/?refresh=1&amp;current={conversation.pk}" in own and f"/c/{conversation.pk}/rename/" in own
    assert f"/c/list/?refresh=1&amp;current={other.pk}" in elsewhere and "/rename/" not in elsewhere


@pytest.mark.redis
class TestOverRedisChannelLayer:
    async def test_layer_is_redis(self) -> None:
        assert type(get_channel_layer()).__name__ == "RedisChannelLayer"

    async def test_streamed_turn(self, alice: Any, conversation: Conversation, fake_model: Any) -> None:
        fake_model.reply("Over ", "Redis")
        socket = await connected(alice, conversation)
        await send(socket, "Hi")
        frames = await receive_until(socket, idle)
        await socket.disconnect()
        assert delta_text(frames) == "Over Redis"
        assert (await Message.objects.aget(conversation=conversation, role="assistant")).content == "Over Redis"

    async def test_stop(self, alice: Any, conversation: Conversation, holding_model: None) -> None:
        socket = await connected(alice, conversation)
        await send(socket, "Hi")
        await receive_until(socket, lambda f: "Partial answer" in f)
        await socket.send_json_to({"action": "stop"})
        await receive_until(socket, idle)
        await socket.disconnect()
        reply = await Message.objects.aget(conversation=conversation, role="assistant")
        assert reply.status == Message.Status.INTERRUPTED

    async def test_busy_and_provider_error(self, alice: Any, conversation: Conversation, fake_model: Any) -> None:
        fake_model.fail(message="The model provider timed out.")
        socket = await connected(alice, conversation)
        await send(socket, "Hi")
        frames = await receive_until(socket, idle)
        await socket.disconnect()
        assert "The model provider timed out." in frames[-1]

    async def test_user_group_notice(self, alice: Any, conversation: Conversation) -> None:
        socket = await connected(alice, conversation)
        await get_channel_layer().group_send(
            consumers.user_group(alice.pk), {"type": "memory.notice", "html": "<p>Hi</p>"}
        )
        frame = await socket.receive_from(timeout=5)
        await socket.disconnect()
        assert "<p>Hi</p>" in frame

    async def test_foreign_conversation_refused(self, conversation: Conversation) -> None:
        mallory = await database_sync_to_async(UserFactory)(username="mallory")
        socket = await open_socket(mallory, conversation)
        ok, code = await socket.connect()
        assert (ok, code) == (False, consumers.CLOSE_NOT_FOUND)

    async def test_a_turn_reaches_this_processs_page_without_the_layer_and_another_processs_through_it(
        self, alice: Any, conversation: Conversation, fake_model: Any, monkeypatch: Any
    ) -> None:
        from channels_redis.core import RedisChannelLayer

        layer = get_channel_layer()
        sent: list[tuple[str, str]] = []  # (channel or group, event type) that went through Redis
        real_send, real_group_send = layer.send, layer.group_send

        async def send_(channel: str, message: dict[str, Any]) -> None:
            sent.append((channel, message["type"]))
            await real_send(channel, message)

        async def group_send_(group: str, message: dict[str, Any]) -> None:
            sent.append((group, message["type"]))
            await real_group_send(group, message)

        monkeypatch.setattr(layer, "send", send_)
        monkeypatch.setattr(layer, "group_send", group_send_)
        fake_model.reply("Local ", "only")
        socket = await connected(alice, conversation)
        await send(socket, "Hi")
        assert delta_text(await receive_until(socket, idle)) == "Local only"
        assert not [kind for _, kind in sent if kind.startswith("turn.")]  # no other page: Redis not used

        # A page of another web process (another client prefix) on the same conversation.
        config: dict[str, Any] = django_settings.CHANNEL_LAYERS["default"]["CONFIG"]  # type: ignore[assignment]
        other = RedisChannelLayer(**config)
        remote = await other.new_channel()
        await other.group_add(fanout.conversation_group(conversation.pk), remote)
        try:
            fake_model.reply("Shared ", "reply")
            await send(socket, "Again")
            assert delta_text(await receive_until(socket, idle)) == "Shared reply"
            kinds = [kind for target, kind in sent if target == remote]
            assert kinds[0] == "turn.begin" and kinds[-1] == "turn.end"  # the other process's page, in order
            received = [await asyncio.wait_for(other.receive(remote), 5) for _ in kinds]
            assert [m["type"] for m in received] == kinds
            assert "".join(m["text"] for m in received if m["type"] == "turn.delta") == "Shared reply"
        finally:
            await other.group_discard(fanout.conversation_group(conversation.pk), remote)
            await other.close_pools()
        await socket.disconnect()

    async def test_the_layers_copy_of_a_turn_that_runs_here_is_not_shown_twice(
        self, alice: Any, conversation: Conversation
    ) -> None:
        from chat.turn import pages

        socket = await connected(alice, conversation)
        pages.turn_started_here(987654)
        await get_channel_layer().group_send(
            fanout.conversation_group(conversation.pk),
            {"type": "turn.begin", "message_id": 987654, "html": "<p>a duplicate</p>"},
        )
        await get_channel_layer().group_send(
            fanout.conversation_group(conversation.pk),
            {"type": "turn.begin", "message_id": 987655, "html": "<p>another process's turn</p>"},
        )
        frame = await socket.receive_from(timeout=5)
        await socket.disconnect()
        assert "another process's turn" in frame  # the first one was skipped: its page got it directly


async def test_a_tool_call_shows_what_the_reply_is_doing(
    alice: Any, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.call_tool("no_such_tool")
    fake_model.reply("Done.")
    socket = await connected(alice, conversation)
    await send(socket, "Do something")
    frames = await receive_until(socket, idle)
    await socket.disconnect()

    assert any("-activity" in f and "Working…" in f for f in frames)
    assert "Done." in frames[-1]


async def test_garbage_is_answered_without_dropping_the_connection(alice: Any, conversation: Conversation) -> None:
    socket = await connected(alice, conversation)
    await socket.send_to(text_data="not json")
    frame = await socket.receive_from(timeout=5)
    await socket.send_json_to({"action": "dance"})
    second = await socket.receive_from(timeout=5)
    await socket.disconnect()

    assert "Unknown request." in frame
    assert "Unknown request." in second


@pytest.fixture
def private_redis(settings: Any) -> Any:
    """The channel layer on a private redis-server (on a free port) that a test may stop and start."""
    import shutil

    from tests.processes import PrivateRedis

    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    redis = PrivateRedis()
    redis()
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis.url]}}
    }
    yield redis, redis.servers
    redis.close()
    push.layer_reset()  # later tests start with a working layer


async def test_without_the_channel_layer_the_page_still_connects_streams_its_turn_and_recovers(
    alice: Any, conversation: Conversation, fake_model: Any, private_redis: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(consumers, "LAYER_RETRY_SECONDS", 0.5)
    start, servers = private_redis
    servers[0].terminate()  # Redis goes away
    servers[0].wait()

    socket = await open_socket(alice, conversation)
    ok, code = await socket.connect(timeout=5)  # trying the channel layer takes a moment
    assert ok, code  # no 500: the page degrades
    fake_model.reply("Still ", "here")
    await send(socket, "Anyone?")
    frames = await receive_until(socket, idle)
    assert "Still here" in frames[-1] and "is-complete" in frames[-1]

    start()  # Redis is back: the page joins its groups again and is live
    back = await receive_until(socket, lambda f: 'data-live="1"' in f)
    await get_channel_layer().group_send(consumers.user_group(alice.pk), {"type": "memory.notice", "html": "<p>Hi</p>"})
    assert "<p>Hi</p>" in (await socket.receive_from(timeout=5))
    assert back

    servers[-1].terminate()  # and away again, this time under a live page
    servers[-1].wait()
    await receive_until(socket, lambda f: 'data-live="0"' in f)
    fake_model.reply("Again ", "fine")
    await send(socket, "And now?")
    frames = await receive_until(socket, idle)
    await socket.disconnect()
    assert "Again fine" in frames[-1] and "is-complete" in frames[-1]


async def test_a_page_that_falls_behind_gets_its_waiting_text_in_one_piece() -> None:
    consumer = consumers.ChatConsumer()
    consumer._inbox = asyncio.Queue()
    for offset, text in ((0, "Hel"), (3, "lo "), (6, "you")):
        consumer._to_inbox({"type": "turn.delta", "message_id": 7, "offset": offset, "text": text})
    consumer._to_inbox({"type": "turn.end", "message_id": 7, "html": "<p>end</p>"})
    consumer._to_inbox({"type": "turn.delta", "message_id": 8, "offset": 0, "text": "next"})

    message = await consumer._inbox_receive()
    assert message["type"] == "turn.local"
    assert [(e["type"], e.get("text")) for e in message["events"]] == [
        ("turn.delta", "Hello you"),
        ("turn.end", None),
        ("turn.delta", "next"),
    ]


def test_a_page_far_behind_drops_reply_text_but_never_a_replys_end(monkeypatch: Any) -> None:
    monkeypatch.setattr(consumers, "INBOX_LIMIT", 2)
    consumer = consumers.ChatConsumer()
    consumer._inbox = asyncio.Queue()
    for offset in range(4):
        consumer._to_inbox({"type": "turn.delta", "message_id": 7, "offset": offset, "text": "x"})
    consumer._to_inbox({"type": "turn.end", "message_id": 7, "html": "<p>end</p>"})
    kinds = [consumer._inbox.get_nowait()["type"] for _ in range(consumer._inbox.qsize())]
    assert kinds == ["turn.delta", "turn.delta", "turn.end"]


async def test_a_streamed_reply_reaches_the_page_without_trips_to_the_database_thread(
    alice: Any, conversation: Conversation, fake_model: Any, monkeypatch: Any
) -> None:
    """AsyncConsumer.dispatch would close old connections in the process's one thread-sensitive thread
    before every event: at a hundred streaming pages, that thread's queue delayed every reply."""
    import channels.consumer

    trips: list[str] = []

    async def counted() -> None:
        trips.append("close_old_connections")

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    socket = await connected(alice, conversation)
    fake_model.reply("One ", "two ", "three")
    await send(socket, "Count")
    frames = await receive_until(socket, idle)
    await socket.disconnect()
    assert "One two three" in frames[-1] and "is-complete" in frames[-1]
    assert trips == []
