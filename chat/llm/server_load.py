"""Whether the model server is still working on a request this app gave up on, and how fast it writes.

A call abandoned at its deadline is not always over at the server: a non-streamed generation on
llama-cpp-python runs on to its `max_tokens` whatever the client does, and no server can interrupt the
reading of a long prompt. Sending the next request then puts two at a single-slot server, and the next
one waits there past its own deadline. So whoever gave up holds its place in the provider queue
(chat.model_queue) until the server is seen idle, or until the abandoned request must have ended:

- **Seen idle**: llama.cpp's `GET /slots` (no slot `is_processing`), or its `GET /health` answering
  503 "no slot available" while it is busy (older versions). A server with neither (llama-cpp-python,
  vLLM, Ollama, OpenAI) is not asked again after the first look finds nothing.
- **Must have ended**: the time the request's `max_tokens` take at the speed the server has shown
  (completion tokens per second of the calls that finished, kept per model), less the time already
  spent, plus a margin; with no speed known yet, the call's own time limit once more. Never more than
  HOLD_MAX_SECONDS.

Judge calls and summaries ask for no more tokens than the server writes within their time limit at the
speed it has shown (`tokens_within`): a longer answer could not arrive in time anyway, and an abandoned
call then holds the server for about its time limit at most, not for its whole `max_tokens`.

A streamed request that was already receiving tokens is stopped by closing it (llama.cpp and
llama-cpp-python check for a closed connection at every token), so its hold is short.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.cache import cache

from chat.llm.base import LLMError

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2.0
PROBE_EVERY_SECONDS = 1.0
HOLD_MAX_SECONDS = 600.0
#: beyond the estimate from the server's speed: the prompt's reading, a loaded machine
HOLD_MARGIN_SECONDS = 5.0
#: a stream closed while tokens were arriving: the server stops at its next token
STREAM_CLOSED_HOLD_SECONDS = 2.0
SPEED_KEY = "memora:speed:{base}:{model}"
#: the fewest tokens a call's `max_tokens` is cut to for a slow server (a judge answer needs some room)
MIN_CAPPED_TOKENS = 64


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


# --- the speed the server has shown ------------------------------------------------------------------


def _speed_key(model: str) -> str:
    return SPEED_KEY.format(base=settings.OPENAI_BASE_URL or "default", model=model).replace(" ", "_")[:240]


def observe_speed(*, model: str, completion_tokens: int, seconds: float) -> None:
    """A call of `model` that wrote `completion_tokens` in `seconds` (its prompt's reading included, so
    the speed is on the slow side). The slower of this and the last speed is kept, halfway towards it."""
    if completion_tokens < 8 or seconds <= 0:
        return  # too short to say anything about the writing speed
    seen = completion_tokens / seconds
    known = speed(model)
    value = seen if known is None else min(seen, (seen + known) / 2)
    try:
        cache.set(_speed_key(model), value, None)
    except Exception:  # a cache outage leaves holds at the call's own time limit, never breaks a call
        logger.debug("could not keep the speed of %s", model)


def speed(model: str) -> float | None:
    """Completion tokens per second `model` has shown, or None before any call finished."""
    try:
        value = cache.get(_speed_key(model))
    except Exception:
        return None
    return float(value) if value else None


def tokens_within(*, model: str, max_tokens: int | None, seconds: float) -> int | None:
    """`max_tokens` of a blocking call with a time limit of `seconds`: at most what `model` writes in that
    time at the speed it has shown (never below MIN_CAPPED_TOKENS), as asked before any speed is known."""
    rate = speed(model)
    if not rate or not max_tokens or seconds <= 0:
        return max_tokens
    return min(max_tokens, max(MIN_CAPPED_TOKENS, int(rate * seconds)))


def hold_seconds(*, model: str, max_tokens: int | None, elapsed: float, time_limit: float) -> float:
    """How long an abandoned request may still occupy the server, at most HOLD_MAX_SECONDS."""
    rate = speed(model)
    if not rate or not max_tokens:
        return min(HOLD_MAX_SECONDS, time_limit)
    return min(HOLD_MAX_SECONDS, max(0.0, max_tokens / rate - elapsed) + HOLD_MARGIN_SECONDS)


# --- is the server busy? -----------------------------------------------------------------------------


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_SECONDS) as response:
            return response.status, json.loads(response.read(1_000_000) or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read(100_000) or b"null")
        except ValueError:
            return exc.code, None


def _slots(root: str) -> bool | None:
    status, slots = _get(f"{root}/slots")
    if status != 200 or not isinstance(slots, list) or not slots:
        return None
    # llama.cpp: `is_processing` (current) or `state` (0 idle, older versions).
    return any(bool(s.get("is_processing", s.get("state", 0))) for s in slots if isinstance(s, dict))


def _health(root: str) -> bool | None:
    status, body = _get(f"{root}/health")
    said = json.dumps(body).lower() if body is not None else ""
    if status == 503 and "no slot" in said:
        return True
    return None  # "ok" says the server is up, not that it is idle


@lru_cache(maxsize=8)
def _probes(root: str) -> tuple[Callable[[str], bool | None], ...]:
    """The probe this server answers (asked once per process): `/slots`, else a `/health` that exists,
    else none (most servers)."""
    try:
        if _slots(root) is not None:
            return (_slots,)
        if _get(f"{root}/health")[0] in (200, 503):
            return (_health,)
    except Exception:  # refused, not JSON: this server says nothing about its load
        pass
    return ()


def busy(base_url: str) -> bool | None:
    """True while the server says a request is being processed, False when it says none is, None when
    it does not say."""
    root = _root(base_url)
    for probe in _probes(root):
        try:
            return probe(root)
        except Exception:
            return None
    return None


def wait_until_idle(*, base_url: str, seconds: float, renew: Callable[[], None] | None = None) -> str:
    """Wait until the server says it is idle (at most HOLD_MAX_SECONDS), or, on a server that does not
    say, for `seconds`. Returns why it stopped ("idle", "waited"), for the log. `renew` is called every
    few seconds (the caller's queue ticket)."""
    started = renewed = time.monotonic()
    end = started + seconds
    while time.monotonic() < end:
        said = busy(base_url)
        if said is False:
            return "idle"
        if said is True:  # the server tells: its word, not the estimate, ends the wait
            end = started + HOLD_MAX_SECONDS
        if renew is not None and time.monotonic() - renewed > 5:
            renew()
            renewed = time.monotonic()
        time.sleep(min(PROBE_EVERY_SECONDS, max(0.0, end - time.monotonic())))
    return "waited"


def too_slow(model: str, timeout: float) -> LLMError:
    """An answer cut off at the `max_tokens` the server's speed allowed: it could not have arrived within
    the time limit, so it counts as a timeout (the server's slowness, not the answer's fault)."""
    error = LLMError(
        f"The model writes about {speed(model) or 0:.1f} tokens a second: its answer could not be "
        f"complete within {timeout:g} s.",
        kind="timeout",
    )
    error.writing = True  # the server finished the call: nothing to wait for
    return error
