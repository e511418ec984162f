"""The chat WebSocket: one connection per open conversation page, at ws/c/<conversation id>/.

The browser (htmx's ws extension) sends JSON form values:
    {"action": "send", "content": "..."}   start a turn
    {"action": "stop"}                      stop the reply being written (saved as "interrupted")
and receives HTML fragments that htmx swaps in by id: the same partials the page renders
(chat/_message.html and friends), so the live page always equals a reload.

A turn runs in its own asyncio task, so the consumer keeps receiving while it streams (that is
what lets "stop" cancel it). Deltas are batched: the first is sent at once (time to first token
matters most), later ones at most every FLUSH_SECONDS.

Server-side events for a user reach all their open chat pages through the channel layer group
``user-<user id>`` (see `user_group`). To show a notice, send

    {"type": "memory.notice", "html": "<rendered fragment>"}   (or "type": "chat.notice")

to that group; the fragment is appended to the page's notices area. {"type": "session.close"}
closes every socket of the user (sent on logout and password change).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from contextlib import aclosing
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils.html import escape

from accounts.models import User
from chat import selectors, services
from chat.agent import Turn, TurnEvent
from chat.models import Conversation, Message
from chat.views import message_html

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.04
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


def user_group(user_id: int) -> str:
    """The channel layer group of one user's open chat pages."""
    return f"user-{user_id}"


@database_sync_to_async
def _conversation_for(user: User, conversation_id: str) -> Conversation | None:
    try:
        return selectors.conversation_list(user=user).get(pk=conversation_id)
    except (Conversation.DoesNotExist, ValidationError, ValueError):
        return None


@database_sync_to_async
def _message_reload(conversation: Conversation, message_id: int) -> Message:
    return selectors.message_list(conversation=conversation).get(pk=message_id)


def notice_html(text: str, *, level: str = "info") -> str:
    return render_to_string("chat/_notice.html", {"text": text, "level": level})


def turn_state_html(state: str) -> str:
    return render_to_string("chat/_turn_state.html", {"state": state, "oob": True})


def delta_html(message_id: int, text: str) -> str:
    return f'<span hx-swap-oob="beforeend:#message-{message_id}-text">{escape(text)}</span>'


TOOL_ACTIVITY = {"flush_memory": "Updating memory…", "summarize_context": "Summarizing earlier messages…"}


def activity_html(message_id: int, tool: str) -> str:
    """What the reply is doing while a tool runs (it may take a few seconds)."""
    text = TOOL_ACTIVITY.get(tool, "Working…")
    return f'<p id="message-{message_id}-activity" class="message-activity" hx-swap-oob="true">{escape(text)}</p>'


def start_html(event: TurnEvent, conversation: Conversation) -> str:
    """The user's message and the empty reply; the conversation moves to the top of the list."""
    assert event.user_message and event.assistant_message
    messages = message_html(event.user_message, live=True) + message_html(event.assistant_message, live=True)
    context = {"conversation": conversation, "current": conversation}
    return (
        f'<div hx-swap-oob="beforeend:#messages">{messages}</div>'
        f'<div id="conversation-{conversation.pk}" hx-swap-oob="delete"></div>'
        '<div hx-swap-oob="afterbegin:#conversation-list">'
        + render_to_string("chat/_conversation_item.html", context)
        + "</div>"
        + render_to_string("chat/_title_oob.html", context)
        + turn_state_html("streaming")
    )


def final_html(message: Message, *, retry_text: str) -> str:
    return message_html(message, retry_text=retry_text, live=True, oob=True) + turn_state_html("idle")


class ChatConsumer(AsyncJsonWebsocketConsumer):
    user: User
    conversation: Conversation
    task: asyncio.Task[None] | None = None
    group: str = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation = await _conversation_for(user, self.scope["url_route"]["kwargs"]["conversation_id"])
        if conversation is None:  # missing and not yours look the same
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.user, self.conversation = user, conversation
        self.group = user_group(user.pk)
        self._send_lock = asyncio.Lock()
        self._closed = False
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        self._closed = True
        if self.task is not None:
            # A dropped connection stops the turn; the agent saves what arrived as "interrupted".
            await self._stop()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if text_data is None:  # a binary frame: answered, not a dropped connection
            await self.push(notice_html("Unknown request: send JSON text frames.", level="error"))
            return
        await super().receive(text_data=text_data, **kwargs)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return json.loads(text_data)
        except ValueError:
            return None  # answered as an unknown request below, without dropping the connection

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        action = content.get("action") if isinstance(content, dict) else None
        if action == "send":
            await self._start(content.get("content"))
        elif action == "stop":
            await self._stop()
        else:
            await self.push(notice_html("Unknown request.", level="error"))

    async def _start(self, text: object) -> None:
        if self.task is not None and not self.task.done():
            await self.push(notice_html(str(services.ConversationBusy()), level="error") + turn_state_html("streaming"))
            return
        try:
            turn = await Turn.begin(user=self.user, conversation=self.conversation, content=text)  # type: ignore[arg-type]
        except services.TurnRejected as exc:
            await self.push(notice_html(str(exc), level="error") + turn_state_html("rejected"))
            return
        self.task = asyncio.create_task(self._run(turn))

    async def _stop(self) -> None:
        task, self.task = self.task, None
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self, turn: Turn) -> None:
        started = turn.started
        retry_text = started.user_message.content
        batch = DeltaBatch(self, started.assistant_message.pk)
        try:
            async with aclosing(turn.events()) as events:
                async for event in events:
                    if event.type == "delta":
                        await batch.add(event.text)
                    elif event.type == "start":
                        # Rendered and sent while the agent prepares the model call, not before it.
                        batch.after = asyncio.create_task(self._push_start(event, started.conversation))
                    elif event.type == "tool":
                        await batch.flush()
                        await self.push(activity_html(started.assistant_message.pk, event.tool))
                    elif event.assistant_message is not None:  # "done" or "error"
                        await batch.flush()
                        await self.push(final_html(event.assistant_message, retry_text=retry_text))
        except asyncio.CancelledError:
            batch.cancel()
            if batch.after is not None:
                await batch.after
            if not self._closed:
                message = await _message_reload(self.conversation, started.assistant_message.pk)
                await self.push(final_html(message, retry_text=retry_text))
        except Exception:
            logger.exception("chat stream failed")
            failed = notice_html("Something went wrong. Reload the page.", level="error")
            await self.push(failed + turn_state_html("idle"))

    async def _push_start(self, event: TurnEvent, conversation: Conversation) -> None:
        await self.push(start_html(event, conversation))

    async def push(self, html: str) -> None:
        if self._closed:
            return
        async with self._send_lock:
            await self.send(text_data=html)

    async def memory_notice(self, event: dict[str, Any]) -> None:
        """Append a rendered fragment (event["html"]) to the page's notices area."""
        await self.push(f'<div id="notices" hx-swap-oob="beforeend">{event["html"]}</div>')

    chat_notice = memory_notice

    async def chat_marker(self, event: dict[str, Any]) -> None:
        """A conversation marker (chat.markers): appended to this page's timeline if it is ours."""
        if event.get("conversation_id") == str(self.conversation.pk):
            await self.push(f'<div hx-swap-oob="beforeend:#messages">{event["html"]}</div>')

    async def session_close(self, event: dict[str, Any]) -> None:
        """The user logged out or changed their password (accounts.sessions): close this socket."""
        await self.close(code=CLOSE_UNAUTHENTICATED)


class DeltaBatch:
    """Collects reply text and pushes it at most every FLUSH_SECONDS; the first piece goes at once."""

    def __init__(self, consumer: ChatConsumer, message_id: int) -> None:
        self.consumer, self.message_id = consumer, message_id
        self.parts: list[str] = []
        self.last_flush = float("-inf")  # the first piece goes at once, whatever the loop's clock says
        self.timer: asyncio.TimerHandle | None = None
        self.pending: set[asyncio.Task[None]] = set()
        self.after: asyncio.Task[None] | None = None

    async def add(self, text: str) -> None:
        self.parts.append(text)
        loop = asyncio.get_running_loop()
        wait = self.last_flush + FLUSH_SECONDS - loop.time()
        if wait <= 0:
            await self.flush()
        elif self.timer is None:
            self.timer = loop.call_later(wait, self._flush_soon)

    def _flush_soon(self) -> None:
        self.timer = None
        task = asyncio.ensure_future(self.flush())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def flush(self) -> None:
        self.cancel()
        if self.after is not None:  # the user's message and the empty reply go first
            await self.after
        self.last_flush = asyncio.get_running_loop().time()
        if self.parts:
            text, self.parts = "".join(self.parts), []
            await self.consumer.push(delta_html(self.message_id, text))

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
