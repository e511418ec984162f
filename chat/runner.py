"""Where a turn runs: in a task of the web process, owned by the conversation, not by a connection.

    running = await runner.start_turn(user=..., conversation=..., content=...)  # may raise TurnRejected
    running = await runner.start_turn(user=..., conversation=..., retry=True)  # the failed latest reply, again
    events = running.listen()         # this process's listeners (the SSE response): every TurnEvent
    final = await running.result()    # the last event ("done" | "error"), without tying the turn to the caller
    runner.stop(conversation=...)     # from any tab, any process, or the API (sync; call it off the loop)

Why here. A page that is closed or reloaded, a dropped WebSocket or an SSE client that goes away only
stops *listening*: the turn goes on, is saved as complete, and every open tab (in any web process)
follows it, because what a turn shows goes to every page of the conversation, not to the socket that
started it: this process's pages directly, other processes' through the channel layer
(`conversation_group`; chat/pages.py). Only Stop stops it.

What goes to the pages, rendered once per event and only when a page gets it (chat/fragments.py):
    {"type": "turn.begin", "message_id", "html"}          the user's message and the empty reply
    {"type": "turn.delta", "message_id", "offset", "text"} reply text, batched (first piece at once,
                                                           then at most every `flush_interval()`)
    {"type": "turn.text", "message_id", "text"}            all the text so far, about once a second
    {"type": "turn.html", "message_id", "html"}            tool activity
    {"type": "turn.end", "message_id", "html"}             the saved reply, and the page is idle again
`offset` and the periodic full text let a tab that joined mid-reply (or missed a message) catch up
without gaps or repeats (chat/consumers.py).

While it runs, the turn's lease is renewed and its text so far saved every HEARTBEAT_SECONDS, by one
heartbeat per process for all its turns (chat/leases.py); that is also where a Stop asked in another
process, or a lost lease, is noticed.
A sweep in every web process (started by the ASGI lifespan, `lifespan`) closes the turns whose
process died. When the server shuts down cleanly, the turns it runs are stopped and saved first.

When the channel layer is unreachable (Redis down), sends are skipped for a few seconds at a time
instead of slowing the turn (the rule of chat/push.py); pages of this process follow its turns as
always (chat/pages.py), and those of other processes poll the saved text.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from contextlib import aclosing
from typing import Any
from uuid import UUID

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from accounts.models import User
from chat import leases, pages, push, services
from chat.agent import Turn, TurnEvent
from chat.fragments import (
    activity_html,
    final_html,
    notice_html,
    start_html,
    summary_divider_html,
    turn_state_html,
    waiting_html,
)
from chat.models import Conversation, Message
from chat.selectors import SummaryDivider

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.04
FLUSH_TURNS = 20  # replies of one process beyond which their text is batched longer (flush_interval)
PAUSE_AFTER_WAIT = 0.002  # a wait for the model's next piece longer than this was a wait for the network
SHUTDOWN_SECONDS = 10.0
STOPPED = gettext_noop("The reply was stopped.")
SKIPPABLE = {"turn.delta", "turn.text"}

REMOTE_REFRESH_SECONDS = 1.0  # how often a turn looks again for pages in other processes

_running: dict[str, RunningTurn] = {}
_registry_lock = threading.Lock()
_sweeper: asyncio.Task[None] | None = None


def conversation_group(conversation_id: Any) -> str:
    """The channel layer group of one conversation's open pages, in every web process."""
    return f"conversation-{conversation_id}"


def running_turn(conversation_id: Any) -> RunningTurn | None:
    """The turn this process runs in that conversation, if any."""
    return _running.get(str(conversation_id))


async def start_turn(
    *,
    user: User,
    conversation: Conversation | UUID,
    content: object = None,
    retry: bool = False,
    message_id: int | None = None,
    origin: services.TurnOrigin | None = None,
) -> RunningTurn:
    """Begin a turn (raises services.TurnRejected, writing nothing) and run it in the background.
    With `retry`, the turn writes the conversation's failed latest reply again (`message_id`, when
    given, must be that reply) instead of answering a new message. `origin` is where the turn comes from
    (its address counts towards the per-address limit; a socket's session is re-checked).

    `conversation` may be its id: then it is looked up with the turn's start (Http404 unless it is the
    user's), in the same trip to the database.

    Call `listen()` on the result before awaiting anything else to get every event from the start.
    """
    try:
        turn = await _begin(
            user=user, conversation=conversation, content=content, retry=retry, message_id=message_id, origin=origin
        )
    except services.ConversationBusy:
        # The lock may be held by a turn whose process died (chat/leases.py): close that turn, then try
        # once more. Only then: on the way to every first token, it would be one more database trip.
        recover = database_sync_to_async(leases.turns_recover, thread_sensitive=False)
        conversation_id = conversation.pk if isinstance(conversation, Conversation) else conversation
        if not await recover(conversation_id=conversation_id):
            raise
        turn = await _begin(
            user=user, conversation=conversation, content=content, retry=retry, message_id=message_id, origin=origin
        )
    running = RunningTurn(turn, language=translation.get_language())
    pages.turn_started_here(running.message_id)
    with _registry_lock:
        _running[running.key] = running
    # A fresh context: the turn outlives the request or socket that started it, so it must not use that
    # request's thread for database calls (asgiref shuts it down when the request ends).
    running.task = asyncio.create_task(running.main(), name=f"turn-{running.key}", context=contextvars.Context())
    return running


async def _begin(
    *,
    user: User,
    conversation: Conversation | UUID,
    content: object,
    retry: bool,
    message_id: int | None,
    origin: services.TurnOrigin | None,
) -> Turn:
    if retry:
        return await Turn.begin_retry(user=user, conversation=conversation, message_id=message_id, origin=origin)
    return await Turn.begin(user=user, conversation=conversation, content=content, origin=origin)  # type: ignore[arg-type]


def stop(*, conversation: Conversation) -> bool:
    """Stop the turn running in `conversation`, in whichever process runs it; False when none runs.

    Synchronous (it writes the stop flag): call it from a view or through database_sync_to_async.
    """
    requested = leases.turn_stop_request(conversation=conversation)
    running = running_turn(conversation.pk)
    if running is not None and running.task is not None:
        running.loop.call_soon_threadsafe(running.task.cancel)  # this process's own: at once
        return True
    return requested


class RunningTurn:
    def __init__(self, turn: Turn, *, language: str | None = None) -> None:
        self.turn = turn
        self.language = language or settings.LANGUAGE_CODE  # of the page or request that started it
        self.key = str(turn.started.conversation.pk)
        self.message_id = turn.started.assistant_message.pk
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[TurnEvent] | None = None
        self.listeners: list[asyncio.Queue[TurnEvent | None]] = []
        self.fanout: Fanout
        self.saved_text = ""  # the reply text as the last heartbeat saved it

    def listen(self) -> asyncio.Queue[TurnEvent | None]:
        """A queue of this turn's events; None after the last one."""
        queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        self.listeners.append(queue)
        return queue

    async def result(self) -> TurnEvent:
        """The final event. Cancelling the caller (a client that left) does not cancel the turn."""
        assert self.task is not None
        return await asyncio.shield(self.task)

    async def main(self) -> TurnEvent:
        # Its own thread for database calls, as Django gives each request: the turn neither waits for nor
        # blocks the thread of the request or socket that started it.
        # The fresh context has no language: the turn renders and writes in its starter's.
        translation.activate(self.language)
        async with ThreadSensitiveContext():
            return await self._main()

    async def _main(self) -> TurnEvent:
        started = self.turn.started
        self.fanout = Fanout(self.key, self.message_id)
        _heartbeat_ensure()
        last = TurnEvent("error", text=gettext("The reply stopped unexpectedly."), user_message=started.user_message)
        try:
            loop = asyncio.get_running_loop()
            async with aclosing(self.turn.events()) as events:
                asked = loop.time()
                async for event in events:
                    last = event
                    self._emit(event)
                    if event.type == "delta":
                        await _read_pause(waited=loop.time() - asked)
                    asked = loop.time()
        except asyncio.CancelledError:
            # Stopped (or the lease was lost): the turn has saved what arrived; tell everyone, then end.
            message = self.turn._finished or await _reload(self.message_id)
            last = TurnEvent(
                "error", text=gettext(STOPPED), user_message=started.user_message, assistant_message=message
            )
            self._emit(last)
        except Exception:
            logger.exception("turn runner failed")
            message = await _reload(self.message_id)
            last = TurnEvent(
                "error", text=gettext(STOPPED), user_message=started.user_message, assistant_message=message
            )
            self._emit(last)
        finally:
            with _registry_lock:
                if _running.get(self.key) is self:
                    del _running[self.key]
            for queue in self.listeners:
                queue.put_nowait(None)
            self.fanout.close()
            pages.turn_ended_here(self.message_id)
        # The saved reply reaches the pages before the turn counts as over; a late Stop changes nothing now.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self.fanout.task), SHUTDOWN_SECONDS)
        return last

    def _emit(self, event: TurnEvent) -> None:
        if self.listeners:
            # A snapshot: the turn goes on, and saving the reply changes its Message object meanwhile
            # (a piece of text carries no message: it goes as it is).
            snapshot = event
            if event.user_message is not None or event.assistant_message is not None:
                snapshot = dataclasses.replace(
                    event,
                    user_message=copy.copy(event.user_message),
                    assistant_message=copy.copy(event.assistant_message),
                )
            for queue in self.listeners:
                queue.put_nowait(snapshot)
        try:
            self.fanout.event(event, self.turn)
        except Exception:  # a page that cannot be rendered must not stop the turn
            logger.exception("could not render a turn event for open pages")


def flush_interval() -> float:
    """How long a reply's text is batched before it is sent: FLUSH_SECONDS, longer when this process
    writes many replies at once (FLUSH_SECONDS per FLUSH_TURNS of them), so that the channel layer and the
    event loop keep up; the first piece of each reply still goes at once."""
    return FLUSH_SECONDS * max(1.0, len(_running) / FLUSH_TURNS)


def read_pause() -> float:
    """How long a reply pauses before it reads on, after it had to wait for the model's next piece: not
    at all, unless this process writes more than FLUSH_TURNS replies at once; then half of
    `flush_interval`, their text's batching time anyway. The pieces that arrive meanwhile are read
    together instead of waking the event loop once each (200 streams: about a seventh less CPU)."""
    return flush_interval() / 2 if len(_running) > FLUSH_TURNS else 0.0


async def _read_pause(*, waited: float) -> None:
    # A piece that came at once was already there (read after a pause): read on until one is waited for.
    pause = read_pause()
    if pause > waited > PAUSE_AFTER_WAIT:
        await asyncio.sleep(pause - waited)


# --- the heartbeat: one database trip a second for all of this process's turns ----------------------

_hearts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = weakref.WeakKeyDictionary()


def _heartbeat_ensure() -> None:
    loop = asyncio.get_running_loop()
    heart = _hearts.get(loop)
    if heart is None or heart.done():
        _hearts[loop] = loop.create_task(_heartbeat(), name="turn-heartbeat", context=contextvars.Context())


async def _heartbeat() -> None:
    """Every HEARTBEAT_SECONDS, renew the leases of this loop's running turns and save their text so far,
    in one transaction for all of them (leases.turns_heartbeat): fifty replies make one write a second,
    not fifty. It also brings a Stop asked in another process, or a lost lease, to the turn. Ends when
    no turn runs; the next turn starts it again."""
    loop = asyncio.get_running_loop()
    beat = database_sync_to_async(leases.turns_heartbeat, thread_sensitive=False)
    while True:
        await asyncio.sleep(leases.HEARTBEAT_SECONDS)
        with _registry_lock:
            turns = [r for r in _running.values() if r.loop is loop and r.task is not None and not r.task.done()]
        turns = [r for r in turns if not r.turn.saved]  # a saved turn has released its lease already
        if not turns:
            return
        texts = {r.key: r.turn.text for r in turns}
        pulses = [
            leases.Pulse(
                conversation_id=r.turn.started.conversation.pk,
                lock_token=r.turn.started.lock_token,
                message_id=r.message_id,
                content=texts[r.key] if texts[r.key] != r.saved_text else None,
            )
            for r in turns
        ]
        try:
            beats = await beat(pulses)
        except Exception:  # the database is away for a moment: a lease outlasts a few misses
            logger.warning("could not renew the leases of running turns", exc_info=True)
            continue
        for running in turns:
            text = texts[running.key]
            if text != running.saved_text:
                running.saved_text = text
                running.fanout.send({"type": "turn.text", "message_id": running.message_id, "text": text})
            result = beats.get(running.turn.started.conversation.pk)
            # Not once the turn is saved: it released the lease itself (and a late cancel would report
            # a complete reply as stopped).
            if result is not None and (result.stop or not result.held) and not running.turn.saved:
                assert running.task is not None
                running.task.cancel()


@database_sync_to_async
def _reload(message_id: int) -> Message | None:
    return Message.objects.filter(pk=message_id).first()


class Fanout:
    """Sends a turn's events to its conversation's group, in order, batching the reply's text."""

    def __init__(self, key: str, message_id: int) -> None:
        self.key, self.message_id = key, message_id
        self.group = conversation_group(key)
        self.pending: list[str] = []
        self.sent = 0  # characters of reply text sent so far
        self.outbox: deque[dict[str, Any]] = deque()
        self.wake = asyncio.Event()
        self.closed = False
        self.last_flush = float("-inf")  # the first piece goes at once
        self.remote: list[str] | None = []  # other processes' pages (None: the whole group)
        self.remote_checked = float("-inf")
        self.divider_sent: SummaryDivider | None = None
        self.task = asyncio.create_task(self._run())

    def event(self, event: TurnEvent, turn: Turn) -> None:
        """Queue what `event` shows. Its HTML is rendered by the fan-out task, not here, and only when a page
        gets it: the turn goes on to the provider at once (an API client needs no HTML at all), from copies
        of the messages as they are now."""
        started = turn.started
        divider = turn.summary_divider
        if divider is not None and divider is not self.divider_sent:  # a summary was applied: show where
            self.divider_sent = divider
            self._send_html("turn.html", lambda: summary_divider_html(divider))
        if event.type == "delta":
            self.pending.append(event.text)
            self.wake.set()
        elif event.type == "start":
            now = dataclasses.replace(
                event, user_message=copy.copy(event.user_message), assistant_message=copy.copy(event.assistant_message)
            )
            conversation, retry = copy.copy(started.conversation), started.retry
            self._send_html("turn.begin", lambda: start_html(now, conversation, retry=retry))
        elif event.type == "tool":
            self._send_html("turn.html", lambda: activity_html(self.message_id, event.tool))
        elif event.type == "waiting":
            ahead = int(event.text or 0)
            self._send_html("turn.html", lambda: waiting_html(self.message_id, ahead))
        elif event.assistant_message is not None:  # "done" or "error": the saved reply
            saved = copy.copy(event.assistant_message)
            self._send_html("turn.end", lambda: final_html(saved))
        else:
            error = gettext("Something went wrong. Reload the page.")
            self._send_html("turn.end", lambda: notice_html(error, level="error") + turn_state_html("idle"))

    def _send_html(self, kind: str, render: Callable[[], str]) -> None:
        self.send({"type": kind, "message_id": self.message_id, "html": render})

    def send(self, message: dict[str, Any]) -> None:
        # Text that arrived before this message goes before it: a page must see a reply begin before
        # its text, and its text before its end.
        self._pending_to_outbox()
        self.outbox.append(message)
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()

    def _pending_to_outbox(self) -> None:
        if self.pending:
            text, self.pending = "".join(self.pending), []
            self.outbox.append({"type": "turn.delta", "message_id": self.message_id, "offset": self.sent, "text": text})
            self.sent += len(text)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self.outbox:  # strictly in order
                message = self.outbox.popleft()
                if message["type"] == "turn.delta":
                    self.last_flush = loop.time()
                await self._deliver(message)
                continue
            if not self.pending:
                if self.closed:
                    return
                self.wake.clear()
                await self.wake.wait()
                continue
            wait = self.last_flush + flush_interval() - loop.time()
            if wait > 0 and not self.closed:  # batch: wait for the interval, or for a message that must go now
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), wait)
                continue
            self._pending_to_outbox()

    @staticmethod
    def _rendered(message: dict[str, Any]) -> bool:
        """Render the message's HTML (once, and only for a page that gets it: an API client needs none);
        False when it cannot be rendered, and then it goes to no page (the others still get theirs)."""
        if callable(message.get("html")):
            try:
                message["html"] = message["html"]()
            except Exception:
                logger.exception("could not render a turn event for open pages")
                message["html"] = None
        return message.get("html", "") is not None

    async def _deliver(self, message: dict[str, Any]) -> None:
        local = pages.local_pages(self.key)
        if local and not self._rendered(message):
            return
        for page in local:  # this process's pages: straight into their inboxes
            try:
                page(message)
            except Exception:  # one broken page must not keep the others from the reply
                logger.exception("could not hand a turn event to a page")
        # While the layer is down, the reply's text is skipped (a page catches up from the full text later),
        # never its start, tool activity or end: a page that misses those would look stuck.
        await push.send_event_async(
            message,
            group=self.group,
            lookup=lambda layer: self._remote_pages(layer, message),
            prepare=lambda: self._rendered(message),
            skippable=message["type"] in SKIPPABLE,
        )

    async def _remote_pages(self, layer: Any, message: dict[str, Any]) -> list[str] | None:
        loop = asyncio.get_running_loop()
        if loop.time() >= self.remote_checked + REMOTE_REFRESH_SECONDS or message["type"] == "turn.begin":
            # Pages in other processes: looked up at the start, then about once a second (a page that
            # opens there mid-reply shows the saved text, then catches up at the next full text).
            self.remote = await pages.remote_pages(layer, self.group)
            self.remote_checked = loop.time()
        return self.remote


# --- the web process's lifecycle (ASGI lifespan) ----------------------------------------------------


PRUNE_SECONDS = 60.0
_pruned_at = 0.0


async def recover_once() -> None:
    """Close the turns whose process died (see chat/leases.py), and once a minute delete the turn starts
    too old to count for a limit; a failure is logged, not raised."""
    global _pruned_at
    try:
        async with ThreadSensitiveContext():
            await database_sync_to_async(leases.turns_recover)()
            if time.monotonic() - _pruned_at >= PRUNE_SECONDS:
                _pruned_at = time.monotonic()
                await database_sync_to_async(services.turn_starts_prune)()
    except Exception:
        logger.warning("could not sweep for interrupted replies", exc_info=True)


async def recover_forever() -> None:
    """The sweep, every CHAT_RECOVERY_SWEEP_SECONDS."""
    while True:
        await asyncio.sleep(settings.CHAT_RECOVERY_SWEEP_SECONDS)
        await recover_once()


async def shutdown() -> None:
    """Stop this process's turns and wait (briefly) until each is saved."""
    global _sweeper
    if _sweeper is not None:
        _sweeper.cancel()
        _sweeper = None
    tasks = [r.task for r in list(_running.values()) if r.task is not None]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=SHUTDOWN_SECONDS)


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """ASGI lifespan: start the recovery sweep with the server; stop and save running turns on shutdown."""
    global _sweeper
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            # Before serving: the replies a crashed predecessor left are closed, their conversations free.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(recover_once(), SHUTDOWN_SECONDS)
            if _sweeper is None:
                _sweeper = asyncio.create_task(recover_forever(), name="turn-recovery")
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
