"""The provider adapter's retry policy: a call is asked again only when it failed before anything arrived
and the server cannot still be working on it (connection refused, HTTP 408/429/5xx), never after a
timeout, at most LLM_MAX_RETRIES times, backing off from RETRY_BASE_SECONDS, and never past the call's
deadline. The SDK's own retries are off (chat.llm.openai_adapter).
"""

from __future__ import annotations

import time

from chat.llm.base import LLMError

RETRY_BASE_SECONDS = 0.5


def retryable(error: LLMError) -> bool:
    # The server answered without working on our request, or could not be reached at all: asking again
    # cannot pile up behind a generation that is still running.
    return error.kind == "connection" or (error.kind == "status" and error.status in (408, 429, 500, 502, 503, 504))


def retry_wait(error: LLMError, *, attempt: int, max_retries: int, deadline: float) -> float | None:
    """How long to wait before asking again after attempt `attempt` (0 for the first) failed with
    `error`; None to give up (raise `error`). `deadline` is a time.monotonic() the next try must start before."""
    wait = RETRY_BASE_SECONDS * 2**attempt
    if not retryable(error) or attempt >= max_retries or time.monotonic() + wait >= deadline:
        return None
    return wait
