"""Telling a turn that its model request has been written to the provider's connection.

A turn's first fragment for its pages (the user's message, the empty reply) is rendered on the event loop,
about a millisecond of templates. Rendered while the `openai` client is still sending the request, it
delays the request by as much; rendered once the request is written, it costs nothing, since the provider
is working then. So the turn's runner announces its start once this module reports the writing
(chat.turn.runner, `RunningTurn._hold`), and no later than a few tens of milliseconds.

The adapter's HTTP client runs `attach` before each request: while a callback is set in the calling
task's context (`on_request_written`, set by the turn's runner), it adds httpcore's `trace` extension to the
request, which calls the callback once the request's body has been sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

logger = logging.getLogger(__name__)

on_request_written: ContextVar[Callable[[], None] | None] = ContextVar("on_request_written", default=None)

# httpcore's trace events for a request fully sent, over HTTP/1.1 and HTTP/2.
WRITTEN = frozenset({"http11.send_request_body.complete", "http2.send_request_body.complete"})


async def attach(request: httpx2.Request) -> None:
    """An httpx request hook: report this request's writing to the callback of the calling context."""
    callback = on_request_written.get()
    if callback is None:
        return

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event in WRITTEN:
            try:
                callback()
            except Exception:  # what the turn does with it must never fail its request
                logger.exception("a request-written callback failed")

    request.extensions = {**request.extensions, "trace": trace}
