"""The fan-out: a turn's events, sent to its conversation's pages in order, the reply's text batched
(this process's pages directly, other processes' through the channel layer; chat/turn/pages.py).

When the channel layer is unreachable (Redis down), sends are skipped for a few seconds at a time
instead of slowing the turn (the rule of chat/push.py); pages of this process follow its turns as
always, and those of other processes poll the saved text.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from chat import push
from chat.fragments import (
    activity_html,
    final_html,
    notice_html,
    start_html,
    summary_divider_html,
    turn_state_html,
    waiting_html,
)
from chat.selectors import SummaryDivider
from chat.turn import pages
from chat.turn.events import TurnEvent
from chat.turn.registry import flush_interval

if TYPE_CHECKING:
    from chat.turn.agent import Turn

logger = logging.getLogger(__name__)

SKIPPABLE = {"turn.delta", "turn.text"}

REMOTE_REFRESH_SECONDS = 1.0  # how often a turn looks again for pages in other processes


def conversation_group(conversation_id: Any) -> str:
    """The channel layer group of one conversation's open pages, in every web process."""
    return f"conversation-{conversation_id}"


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
