"""The provider adapter's tools fallback: servers people run themselves do not all handle tools.

A server that rejects `tools` (a 400 that mentions them) or answers an empty stream when they are sent
is asked again without them. A rejection, or an answer that comes once the tools are dropped after an
empty one, means the provider does not handle them: the model is not offered tools again for
TOOLS_RETRY_SECONDS (`ToolsFallback.supported`), so a server restarted with another chat format, or a
passing fault, gets its tools back. An empty answer without tools had another cause (length).

Tools offered again after that pause are on trial: until a request carrying them is answered, a request
that fails before anything arrives (a first-token timeout while the server works through its
function-calling grammar, a dropped connection, an empty answer however the retry without them ends)
turns them off again for the same while, so the next turns do not fail the same way.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from chat.llm.base import LLMError

logger = logging.getLogger(__name__)

#: how long tools stay off after a provider rejected or ignored them, before they are offered again
TOOLS_RETRY_SECONDS = 600.0
IGNORED = "an empty answer when tools were offered"


def rejects_tools(error: LLMError) -> bool:
    text = str(error).lower()
    return error.status in (400, 422, 500, 501) and ("tool" in text or "function" in text)


class ToolsFallback:
    """Whether one model's provider handles tools (set off when it rejected or ignored them)."""

    def __init__(self) -> None:
        self.off_until = 0.0
        # Offered again after a pause: the first failure before anything arrived turns them off again.
        self.on_trial = False

    @property
    def supported(self) -> bool:
        return time.monotonic() >= self.off_until

    def disable(self, why: str) -> None:
        if self.supported:
            logger.warning(
                "the model provider does not handle tools (%s); chat continues without them for %g s",
                why,
                TOOLS_RETRY_SECONDS,
            )
        self.off_until = time.monotonic() + TOOLS_RETRY_SECONDS
        self.on_trial = True

    def request(self, request: dict[str, Any]) -> ToolsRequest:
        return ToolsRequest(self, request)


class ToolsRequest:
    """The fallback of one request: `request` is what to send next (without tools once they were dropped)."""

    def __init__(self, fallback: ToolsFallback, request: dict[str, Any]) -> None:
        self.fallback, self.request = fallback, request
        # Set when an empty answer came to a request with tools: if the same request without them is
        # answered, the provider does not handle tools; if not, the emptiness had another cause (length).
        self.suspect = False

    def answered(self) -> None:
        """Something (text or a tool call) arrived."""
        if self.suspect:
            self.fallback.disable(IGNORED)
            self.suspect = False
        elif "tools" in self.request:  # answered with tools: they work again
            self.fallback.on_trial = False

    def failed(self, error: LLMError | None) -> None:
        """The request ends without anything arriving (`error`, or None: an empty answer). Tools on
        trial that were sent, or dropped after an empty answer, are turned off again."""
        if self.fallback.on_trial and self.fallback.supported and (self.suspect or "tools" in self.request):
            self.fallback.disable(f"offered again, the request failed before any answer: {error or 'empty'}")

    def drop_tools(self, error: LLMError | None) -> bool:
        """Whether to ask again without tools after `error` (None: a finished answer with neither text nor
        a tool call, as llama.cpp's chatml-function-calling gives with tool_choice "auto")."""
        if "tools" not in self.request:
            return False
        if error is None or error.kind == "empty":
            self.suspect = True
        elif rejects_tools(error):
            self.fallback.disable(str(error))
        else:
            return False
        self.request = {k: v for k, v in self.request.items() if k not in ("tools", "tool_choice")}
        return True
