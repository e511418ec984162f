"""The window of a server that states none: llama-cpp-python.

Its `/v1/models` lists no length and it has no `/props`, but it refuses a prompt longer than its
`n_ctx` before reading any of it, in OpenAI's words ("This model's maximum context length is 2048
tokens…"). So, once per process and model, a probe prompt is counted with its tokenize endpoint
(`POST /extras/tokenize/count`, which also tells that this is llama-cpp-python) and, only when it is
longer than PROBE_TOKENS, sent as a completion that the server must refuse: the refusal states the
window. A server that accepted it would have a window beyond any model it can load; the probe's
`max_tokens` is 1 and its answer is ignored.

Any request to llama-cpp-python takes its model lock and cuts off a reply being streamed, so the probe
runs in a thread of its own with a place in the provider queue (chat.model_queue) like any request; the
turn that started it goes on with CHAT_CONTEXT_TOKENS (or its learned window) meanwhile.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.error
import urllib.request
from typing import Any

from django.db import close_old_connections, connection

from chat import model_queue
from chat.llm import get_chat_model

logger = logging.getLogger(__name__)

PROBE_TOKENS = 262_144
PROBE_TEXT = "a " * (PROBE_TOKENS + 1000)
PROBE_TIMEOUT_SECONDS = 60.0
_STATED = re.compile(r"maximum context length is (\d+)|exceed context window of (\d+)", re.I)

_found: dict[tuple[str, str], int | None] = {}
_lock = threading.Lock()


def _post(url: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:
            return response.status, response.read(100_000).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(100_000).decode(errors="replace")
    except OSError:  # refused, reset (a server that does not read such a body), timed out
        return 0, ""


def ask(base_url: str, model: str) -> int | None:
    """The window the refusal of an over-long probe states, or None (not llama-cpp-python, or no refusal)."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    status, said = _post(f"{root}/extras/tokenize/count", {"input": PROBE_TEXT, "model": model})
    if status != 200:
        return None
    count = json.loads(said).get("count")
    if not isinstance(count, int) or count <= PROBE_TOKENS:
        return None
    status, said = _post(f"{base}/completions", {"model": model, "prompt": PROBE_TEXT, "max_tokens": 1})
    stated = _STATED.search(said) if status in (400, 413, 422, 500) else None
    if stated is None:
        return None
    window = int(stated.group(1) or stated.group(2))
    logger.info("the model server's refusal states a context window of %s tokens", window)
    return window


def is_llama_cpp_python(base_url: str) -> bool:
    """Whether the server's OpenAPI document lists llama-cpp-python's tokenize count: read without its
    model lock (its other routes take it)."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    try:
        with urllib.request.urlopen(f"{root}/openapi.json", timeout=5) as response:
            paths = json.loads(response.read(2_000_000)).get("paths") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return "/extras/tokenize/count" in paths


def _run(base_url: str, model: str) -> None:
    window: int | None = None
    try:
        if is_llama_cpp_python(base_url):
            # A place in the queue like any request (behind chat, waiting as long as a judge call may).
            lease = PROBE_TIMEOUT_SECONDS * 2 + 30
            with model_queue.slot(get_chat_model(), lease=lease, wait=600, priority=model_queue.Priority.BACKGROUND):
                window = ask(base_url, model)
    except Exception as exc:  # unreachable, busy for too long: the window stays unknown in this process
        logger.info("could not probe the model server's window: %s", exc)
    finally:
        with _lock:
            _found[(base_url, model)] = window
        close_old_connections()
        connection.close()


def probed_window(base_url: str, model: str) -> int | None:
    """The probed window, None until known (the first call starts the probe in the background)."""
    key = (base_url, model)
    with _lock:
        if key in _found:
            return _found[key]
        _found[key] = None
    threading.Thread(target=_run, args=key, name="window-probe", daemon=True).start()
    return None
