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
(`conversation_group`; chat/turn/fanout.py, chat/turn/pages.py). Only Stop stops it.

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
heartbeat per process for all its turns (chat/turn/leases.py); that is also where a Stop asked in another
process, or a lost lease, is noticed.
A sweep in every web process (started by the ASGI lifespan, `lifespan`) closes the turns whose
process died. When the server shuts down cleanly, the turns it runs are stopped and saved first.

The turns this process runs are in its registry (chat/turn/registry.py); what a turn shows goes to the
pages through its fan-out (chat/turn/fanout.py), which also says what happens while the channel layer
is unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import functools
import logging
import time
from contextlib import aclosing
from typing import Any
from uuid import UUID

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from accounts.models import User
from chat import selectors, services
from chat.llm import written
from chat.models import Conversation, Message
from chat.turn import heartbeat, leases, pages, warm
from chat.turn.agent import Turn
from chat.turn.events import TurnEvent
from chat.turn.fanout import Fanout
from chat.turn.registry import read_pause, running_turns

logger = logging.getLogger(__name__)

PAUSE_AFTER_WAIT = 0.002  # a wait for the model's next piece longer than this was a wait for the network
SHUTDOWN_SECONDS = 10.0
# The longest a turn's start waits for its model request to be written before it is announced (`_hold`).
START_HOLD_SECONDS = 0.05
STOPPED = gettext_noop("The reply was stopped.")

_sweeper: asyncio.Task[None] | None = None


def running_turn(conversation_id: Any) -> RunningTurn | None:
    """The turn this process runs in that conversation, if any."""
    return running_turns.get(conversation_id)


async def start_turn(
    *,
    user: User,
    conversation: Conversation | UUID,
    content: object = None,
    retry: bool = False,
    message_id: int | None = None,
    origin: services.TurnOrigin | None = None,
    regenerate: bool = False,
    replace: int | None = None,
) -> RunningTurn:
    """Begin a turn (raises services.TurnRejected, writing nothing) and run it in the background.
    With `retry`, the turn writes the conversation's failed latest reply again (`message_id`, when
    given, must be that reply) instead of answering a new message; with `regenerate` too, the latest reply
    whatever its status, its shown version kept (chat.versions). With `replace`, `content` is an edit of
    that latest message of the user's, which goes with its replies (chat.edits). `origin` is where the turn comes from
    (its address counts towards the per-address limit; a socket's session is re-checked).

    `conversation` may be its id: then it is looked up with the turn's start (Http404 unless it is the
    user's), in the same trip to the database.

    Call `listen()` on the result before awaiting anything else to get every event from the start.
    """
    begin = functools.partial(
        _begin,
        user=user,
        conversation=conversation,
        content=content,
        retry=retry or regenerate,
        message_id=message_id,
        origin=origin,
        regenerate=regenerate,
        replace=replace,
    )
    try:
        turn = await begin()
    except services.ConversationBusy:
        # The lock may be held by a turn whose process died (chat/turn/leases.py): close that turn, then try
        # once more. Only then: on the way to every first token, it would be one more database trip.
        recover = database_sync_to_async(leases.turns_recover, thread_sensitive=False)
        conversation_id = conversation.pk if isinstance(conversation, Conversation) else conversation
        if not await recover(conversation_id=conversation_id):
            raise
        turn = await begin()
    running = RunningTurn(turn, language=translation.get_language())
    pages.turn_started_here(running.message_id)
    running_turns.add(running)
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
    regenerate: bool = False,
    replace: int | None = None,
) -> Turn:
    if retry:
        return await Turn.begin_retry(
            user=user, conversation=conversation, message_id=message_id, origin=origin, regenerate=regenerate
        )
    return await Turn.begin(
        user=user,
        conversation=conversation,
        content=content,  # type: ignore[arg-type]
        origin=origin,
        replace=replace,
    )


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
        self._held: TurnEvent | None = None  # the start, until the model request is written (`_hold`)
        self._hold_timer: asyncio.TimerHandle | None = None

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
        # This task's model requests say when they are written: the turn's start is announced then (`_hold`).
        written.on_request_written.set(self._release)
        heartbeat.ensure()
        last = TurnEvent("error", text=gettext("The reply stopped unexpectedly."), user_message=started.user_message)
        try:
            loop = asyncio.get_running_loop()
            async with aclosing(self.turn.events()) as events:
                asked = loop.time()
                async for event in events:
                    last = event
                    if event.type == "start":
                        self._hold(event)
                        continue
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
            self._release()
            running_turns.remove(self)
            for queue in self.listeners:
                queue.put_nowait(None)
            self.fanout.close()
            pages.turn_ended_here(self.message_id)
        # The saved reply reaches the pages before the turn counts as over; a late Stop changes nothing now.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self.fanout.task), SHUTDOWN_SECONDS)
        return last

    def _hold(self, event: TurnEvent) -> None:
        """Announce the turn's start once its model request is written (chat.llm.written calls `_release`),
        at the latest START_HOLD_SECONDS from now, and always before anything else. Announced at once, its
        page fragment (about a millisecond of templates) and its API event would be made on this event loop
        while the request is still being sent, delaying it by as much; once it is written, the provider is
        working and they cost the reply nothing."""
        self._held = event
        self._hold_timer = asyncio.get_running_loop().call_later(START_HOLD_SECONDS, self._release)

    def _release(self) -> None:
        """Announce the held start, if it still is."""
        event, self._held = self._held, None
        if event is not None:
            if self._hold_timer is not None:
                self._hold_timer.cancel()
            self._emit(event)

    def _emit(self, event: TurnEvent) -> None:
        self._release()  # the start goes first
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


async def _read_pause(*, waited: float) -> None:
    # A piece that came at once was already there (read after a pause): read on until one is waited for.
    pause = read_pause()
    if pause > waited > PAUSE_AFTER_WAIT:
        await asyncio.sleep(pause - waited)


@database_sync_to_async
def _reload(message_id: int) -> Message | None:
    return selectors.message_get(message_id=message_id)


# --- the web process's lifecycle (ASGI lifespan) ----------------------------------------------------


PRUNE_SECONDS = 60.0
# At most this long before serving anyway: the model's window may be asked of a provider that times out.
WARM_UP_SECONDS = 20.0
_pruned_at = 0.0


async def recover_once() -> None:
    """Close the turns whose process died (see chat/turn/leases.py), and once a minute delete the turn starts
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
    tasks = [r.task for r in running_turns.all() if r.task is not None]
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
            # Before serving: the replies a crashed predecessor left are closed, their conversations free, and
            # the one-time work on a turn's way is done (chat.turn.warm), so the first turns do not wait for it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(recover_once(), SHUTDOWN_SECONDS)
            try:
                await asyncio.wait_for(asyncio.to_thread(warm.warm_up, asyncio.get_running_loop()), WARM_UP_SECONDS)
            except TimeoutError:  # a provider that does not answer: serve, the window's look goes on meanwhile
                logger.warning("the warm-up took over %g s; serving meanwhile", WARM_UP_SECONDS)
            except Exception:  # a misconfigured provider fails its turns with their own error, not the start
                logger.exception("could not build the chat model at startup")
            if _sweeper is None:
                _sweeper = asyncio.create_task(recover_forever(), name="turn-recovery")
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
