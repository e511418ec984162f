"""The chat WebSocket: one connection per open conversation page, at ws/c/<conversation id>/.

The browser (htmx's ws extension) sends JSON form values:
    {"action": "send", "content": "..."}   start a turn
    {"action": "stop"}                      stop the reply being written (saved as "interrupted")
    {"action": "retry", "message_id": "12"} write the failed (or stopped) latest reply again, in place
    {"action": "regenerate", "message_id": "12"} write the latest reply again, its version kept (chat.versions)
    {"action": "edit", "message_id": "12", "content": "..."} the last message sent, edited (chat.edits)
and receives HTML fragments that htmx swaps in by id: the same partials the page renders
(chat/_message.html and friends, see chat/fragments.py), so the live page always equals a reload.

A turn does not belong to the socket that started it: it runs in chat/turn/runner.py and its events reach
every page open on the conversation, so every tab shows the live reply and has Stop: a page in the
process that runs the turn gets them straight into its inbox (chat/turn/pages.py), a page in another web
process through the conversation's channel layer group. Closing the page or losing the connection
leaves the turn running. A page that connects mid-reply gets the text so far, then the live stream:
`_shown` counts the characters each reply shows here, so a delta that overlaps is trimmed and one
after a gap waits for the runner's next full text (about once a second).

Server-side events for a user reach all their open chat pages through the channel layer group
``user-<user id>`` (chat.push.user_group). Other apps show a notice with
chat.extensions.notify_user, which sends

    {"type": "chat.notice", "html": "<rendered fragment>"}

to that group; the fragment is appended to the page's notices area. {"type": "chat.sidebar"} makes each
page fetch its conversation list again (chat.sidebar). {"type": "session.close"}
closes every socket of the user (sent on logout and password change). A socket does not rely on that
message alone (the channel layer may miss it): every turn it starts re-checks, in the statement that
starts it, that the user is still active (and still exists) and that the session the socket was opened
with still exists and matches the current password (services.TurnOrigin); if not, the socket closes.

Without a channel layer (Redis down) the socket still opens: its page follows this process's turns
as always and otherwise polls the saved reply, as the notices poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch
from django.contrib.auth import HASH_SESSION_KEY
from django.core.exceptions import ValidationError
from django.utils import translation
from django.utils.translation import gettext as _

from accounts.middleware import socket_language
from accounts.models import User
from chat import selectors, services, sidebar
from chat.fragments import (
    delta_html,
    message_html,
    messages_append_html,
    messages_removed_html,
    notice_html,
    notices_append_html,
    streaming_html,
    text_html,
    turn_live_html,
    turn_state_html,
)
from chat.models import Conversation, Message
from chat.push import user_group
from chat.turn import fanout, pages, runner

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
LAYER_TIMEOUT_SECONDS = 2.0
LAYER_RETRY_SECONDS = 3.0  # how often a page without a channel layer tries to join again
INBOX_LIMIT = 500  # a page's queued turn events past which its reply text is dropped (caught up later)
TURN_EVENTS = {"turn.begin", "turn.delta", "turn.text", "turn.html", "turn.end"}


@database_sync_to_async
def _conversation_for(user: User, conversation_id: str) -> Conversation | None:
    try:
        return selectors.conversation_list(user=user).get(pk=conversation_id)
    except (Conversation.DoesNotExist, ValidationError, ValueError):
        return None


@database_sync_to_async
def _origin(scope: Any) -> services.TurnOrigin:
    """Where this socket's turns come from: the client's address and the session it was opened with."""
    client = scope.get("client") or ("", 0)
    session = scope.get("session")
    key = getattr(session, "session_key", None)
    session_hash = session.get(HASH_SESSION_KEY) if session is not None and key else None
    return services.TurnOrigin(address=str(client[0] or ""), session_key=key, session_hash=session_hash)


@database_sync_to_async
def _streaming_reply(conversation: Conversation) -> Message | None:
    messages = selectors.message_list(conversation=conversation)
    return messages.filter(role=Message.Role.ASSISTANT, status=Message.Status.STREAMING).last()


class ChatConsumer(AsyncJsonWebsocketConsumer):
    user: User
    conversation: Conversation
    origin: services.TurnOrigin
    joined: list[str]
    live = False  # in the channel layer's groups; otherwise degraded (see the module docstring)
    _unwatch: Callable[[], None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """As channels' AsyncConsumer.__call__, but reading the channel layer through `_layer_receive`,
        which survives the layer going away (Redis down) instead of failing the connection."""
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.channel_name = await self.channel_layer.new_channel()  # a name only: no I/O
        self.base_send = send
        self._accepted = asyncio.Event()
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        with contextlib.suppress(StopConsumer):
            await await_many_dispatch([receive, self._layer_receive, self._inbox_receive], self.dispatch)

    def _to_inbox(self, event: dict[str, Any]) -> None:
        """A turn of this process (chat/turn/pages.py): queued without waiting, so a slow page holds up no one."""
        if self._inbox.qsize() >= INBOX_LIMIT and event["type"] in fanout.SKIPPABLE:
            return  # far behind: the text is caught up from the next full text
        self._inbox.put_nowait(event)

    async def _inbox_receive(self) -> dict[str, Any]:
        """The inbox's events, all that are waiting, as one message: consecutive pieces of a reply's text
        become one, so a page that falls behind catches up in fewer frames."""
        events = [await self._inbox.get()]
        while not self._inbox.empty():
            event = self._inbox.get_nowait()
            last = events[-1]
            if (
                event["type"] == last["type"] == "turn.delta"
                and event["message_id"] == last["message_id"]
                and event["offset"] == last["offset"] + len(last["text"])
            ):
                events[-1] = {**last, "text": last["text"] + event["text"]}
            else:
                events.append(event)
        return {"type": "turn.local", "events": events}

    async def _layer_receive(self) -> Any:
        await self._accepted.wait()  # nothing to receive before `connect` joined (or could not join) the groups
        while True:
            if self.live:
                try:
                    return await self.channel_layer.receive(self.channel_name)
                except Exception as exc:
                    await self._degrade(exc)
                    continue
            await asyncio.sleep(LAYER_RETRY_SECONDS)
            if not self._closed and await self._join(*self._groups()):
                await self._go_live()

    def _groups(self) -> tuple[str, str]:
        return user_group(self.user.pk), fanout.conversation_group(self.conversation.pk)

    async def _degrade(self, exc: Exception) -> None:
        logger.warning("channel layer unavailable (%s); this page falls back to polling", exc)
        self.live, self.joined = False, []
        # The page polls again: a reply being written elsewhere shows as it is saved, so do notices.
        html = turn_live_html(live=False)
        reply = await _streaming_reply(self.conversation)
        if reply is not None and runner.running_turn(self.conversation.pk) is None:
            html += message_html(reply, oob=True)
        await self.push(html)

    async def _go_live(self) -> None:
        self.live = True
        await self._catch_up()

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
        # What this socket renders (and the turns it starts) speaks the page's language: the handlers
        # below run in this same task, so the activation holds for the whole connection.
        translation.activate(socket_language(self.scope))
        self.origin = await _origin(self.scope)
        self._send_lock = asyncio.Lock()
        self._closed = False
        self._shown: dict[int, int] = {}
        self.joined = []
        self.live = await self._join(*self._groups())
        if not self.live:  # no channel layer: this process's turns still come, the rest is polled
            logger.warning("channel layer unavailable; a chat page falls back to polling")
        await self.accept()
        self._unwatch = pages.watch(conversation.pk, self._to_inbox)
        self._accepted.set()
        if self.live:
            await self._catch_up()

    async def _join(self, *groups: str) -> bool:
        joined = []
        for group in groups:
            try:
                await asyncio.wait_for(self.channel_layer.group_add(group, self.channel_name), LAYER_TIMEOUT_SECONDS)
            except Exception:
                return False
            joined.append(group)
        self.joined = joined
        return True

    async def _catch_up(self) -> None:
        """A page opened mid-reply: the reply as saved (the runner's full text follows within a second)."""
        reply = await _streaming_reply(self.conversation)
        html = turn_live_html(live=True)
        if reply is not None:
            self._shown[reply.pk] = len(reply.content)
            html += streaming_html(reply)
        await self.push(html)

    async def disconnect(self, code: int) -> None:
        # The turn goes on without this page (chat/turn/runner.py); only Stop stops it.
        self._closed = True
        if self._unwatch is not None:
            self._unwatch()
        for group in getattr(self, "joined", []):
            try:
                leave = self.channel_layer.group_discard(group, self.channel_name)
                await asyncio.wait_for(leave, LAYER_TIMEOUT_SECONDS)
            except Exception:
                logger.warning("could not leave channel layer group %s", group, exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if text_data is None:  # a binary frame: answered, not a dropped connection
            await self.push(notice_html(_("Unknown request: send JSON text frames."), level="error"))
            return
        await super().receive(text_data=text_data, **kwargs)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return json.loads(text_data)
        except (ValueError, RecursionError):  # garbage, or nesting too deep for the parser
            return None  # answered as an unknown request below, without dropping the connection

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        action = content.get("action") if isinstance(content, dict) else None
        if action == "send":
            await self._start(content=content.get("content"))
        elif action in ("retry", "regenerate"):
            message_id = content.get("message_id")
            if not (isinstance(message_id, int | str) and str(message_id).isdigit()):
                await self.push(notice_html(_("Retry needs the id of the reply to write again."), level="error"))
                return
            await self._start(retry=True, message_id=int(message_id), regenerate=action == "regenerate")
        elif action == "edit":
            message_id = content.get("message_id")
            if not (isinstance(message_id, int | str) and str(message_id).isdigit()):
                await self.push(notice_html(_("Editing needs the id of the message."), level="error"))
                return
            await self._start(content=content.get("content"), replace=int(message_id))
        elif action == "stop":
            await database_sync_to_async(runner.stop)(conversation=self.conversation)
        else:
            await self.push(notice_html(_("Unknown request."), level="error"))

    async def _start(
        self,
        *,
        content: object = None,
        retry: bool = False,
        message_id: int | None = None,
        regenerate: bool = False,
        replace: int | None = None,
    ) -> None:
        try:
            running = await runner.start_turn(
                user=self.user,
                conversation=self.conversation,
                content=content,
                retry=retry,
                message_id=message_id,
                origin=self.origin,
                regenerate=regenerate,
                replace=replace,
            )
        except services.AccessEnded:
            await self.close(code=CLOSE_UNAUTHENTICATED)  # deactivated, deleted, signed out elsewhere
        except services.TurnRejected as exc:
            await self.push(notice_html(str(exc), level="error") + turn_state_html("rejected"))
        else:
            if running.turn.started.replaced_ids:  # an edit: the old message and its replies leave the page
                await self.push(messages_removed_html(running.turn.started.replaced_ids))

    async def push(self, html: str) -> None:
        if self._closed:
            return
        async with self._send_lock:
            await self.send(text_data=html)

    # --- a turn's events (chat/turn/runner.py), from the conversation's group ---

    async def turn_begin(self, event: dict[str, Any]) -> None:
        self._shown[event["message_id"]] = 0
        await self.push(event["html"])

    async def turn_delta(self, event: dict[str, Any]) -> None:
        message_id, offset, text = event["message_id"], event["offset"], event["text"]
        shown = self._shown.get(message_id)
        if shown is None or offset > shown:
            return  # a gap: the runner's next full text catches this page up
        new = text[shown - offset :]
        if new:
            self._shown[message_id] = shown + len(new)
            await self.push(delta_html(message_id, new))

    async def turn_text(self, event: dict[str, Any]) -> None:
        message_id, text = event["message_id"], event["text"]
        if self._shown.get(message_id, -1) >= len(text):
            return
        self._shown[message_id] = len(text)
        await self.push(text_html(message_id, text))

    async def turn_html(self, event: dict[str, Any]) -> None:
        await self.push(event["html"])

    async def turn_end(self, event: dict[str, Any]) -> None:
        self._shown.pop(event["message_id"], None)
        await self.push(event["html"])

    async def dispatch(self, message: dict[str, Any]) -> None:
        # The channel layer's copy of a turn that runs here came to the inbox already (chat/turn/pages.py).
        if message["type"] in TURN_EVENTS and pages.ran_here(message.get("message_id")):
            return
        # Not AsyncConsumer.dispatch: before every handler it closes old database connections in the
        # process's one thread-sensitive thread, so every page's every event queued for that thread
        # (at 100 streaming pages, the queue was the delay). This consumer touches the database only
        # through database_sync_to_async, which cleans up in its own thread.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def turn_local(self, message: dict[str, Any]) -> None:
        """Events of this process's turns, from the inbox, in order."""
        for event in message["events"]:
            if event["type"] in TURN_EVENTS:
                await getattr(self, event["type"].replace(".", "_"))(event)

    async def chat_notice(self, event: dict[str, Any]) -> None:
        """Append a rendered fragment (event["html"], chat.extensions.notify_user) to the page's notices area."""
        html = (event.get("translations") or {}).get(translation.get_language() or "", event["html"])
        await self.push(notices_append_html(html))

    # The notice event's earlier type: a worker still running the previous release (a rolling deploy on
    # Redis) may send it, and a consumer without a handler for an event fails.
    memory_notice = chat_notice

    async def chat_marker(self, event: dict[str, Any]) -> None:
        """A conversation marker (chat.markers): appended to this page's timeline if it is ours."""
        if event.get("conversation_id") == str(self.conversation.pk):
            html = (event.get("translations") or {}).get(translation.get_language() or "", event["html"])
            await self.push(messages_append_html(html))

    async def chat_fragment(self, event: dict[str, Any]) -> None:
        """Rendered out-of-band pieces for one conversation's pages (chat.tasks: the summary divider)."""
        if event.get("conversation_id") == str(self.conversation.pk):
            await self.push(event["html"])

    async def chat_sidebar(self, event: dict[str, Any]) -> None:
        """A conversation of the user was renamed, pinned or moved (chat.sidebar.sidebar_changed): this page
        fetches its list again, and its title when it shows that conversation."""
        own = event.get("conversation_id") == str(self.conversation.pk)
        if own and not await Conversation.objects.filter(pk=self.conversation.pk).aexists():
            return  # deleted: its title and list would answer 404, and the page is leaving it anyway
        await self.push(sidebar.sync_html(current=self.conversation, title=own))

    async def session_close(self, event: dict[str, Any]) -> None:
        """The user logged out or changed their password (accounts.sessions): close this socket."""
        await self.close(code=CLOSE_UNAUTHENTICATED)
