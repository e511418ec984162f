"""What the model provider confirms about itself: its context window, and how its token counts compare
with our estimates (chat.llm.tokens), per model.

- **The window.** When CHAT_CONTEXT_TOKENS is not set, the server is asked once per process, where it
  tells: vLLM's `GET /v1/models` (`max_model_len`), llama.cpp's `GET /props` (`n_ctx`), Ollama's
  `POST /api/show` (`num_ctx` in its parameters). Each look has a short timeout. llama-cpp-python states
  none: its window is read from its refusal of an over-long probe (chat.llm.window_probe, in the
  background). Which of these a turn uses is chat.llm.window_size's.
- **Calibration per model.** A non-streamed call's `usage.prompt_tokens` (judge calls, summaries)
  calibrates that model's estimates (`chat.llm.tokens.calibrated_ratio`, which keeps a margin above the
  server's count: an estimate never falls below what the server confirmed). Servers that send no usage
  in streams (llama.cpp) are calibrated this way too, and, where the server has a tokenize endpoint
  (llama.cpp's `POST /tokenize`, vLLM's `POST /tokenize`, llama-cpp-python's `POST
  /extras/tokenize/count`), by its count of a streamed request: the chat template's rendering where the
  server renders it for us (llama.cpp's `POST /apply-template`), else the text alone (which may raise
  the factor, never lower it); after the stream, before the request leaves the provider queue, at most
  once per TOKENIZE_EVERY_SECONDS per model and process.
  Kept in Django's cache, shared by every process on Redis.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.cache import cache

from chat.llm import tokens

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2.0
TOKENIZE_EVERY_SECONDS = 600.0
RATIO_KEY = "memora:tokens:ratio:{base}:{model}"


# --- the window --------------------------------------------------------------------------------------


def _get(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:
        return json.loads(response.read(1_000_000))


def _vllm(base: str, model: str) -> int | None:
    models = [m for m in _get(f"{base}/models").get("data") or [] if isinstance(m, dict)]
    return _max_model_len([m for m in models if m.get("id") in (model, None)] or models)


def _max_model_len(models: list[dict[str, Any]]) -> int | None:
    lengths = [m.get("max_model_len") for m in models]
    return next((n for n in lengths if isinstance(n, int) and n > 0), None)


def _llama_cpp(root: str, model: str) -> int | None:
    props = _get(f"{root}/props")
    n_ctx = props.get("n_ctx") or (props.get("default_generation_settings") or {}).get("n_ctx")
    return int(n_ctx) if isinstance(n_ctx, int) and n_ctx > 0 else None


def _ollama(root: str, model: str) -> int | None:
    shown = _get(f"{root}/api/show", {"model": model})
    for line in str(shown.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    return None


@lru_cache(maxsize=8)
def server_window(base_url: str, model: str) -> int | None:
    """The window the server at `base_url` states for `model`, or None (asked once per process)."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    for probe, url in ((_vllm, base), (_llama_cpp, root), (_ollama, root)):
        try:
            window = probe(url, model)
        except Exception:  # not this kind of server, or not reachable: try the next
            continue
        if window:
            logger.info("the model server states a context window of %s tokens", window)
            return window
    return None


# --- calibration per model ---------------------------------------------------------------------------


def _ratio_key(model: str) -> str:
    return RATIO_KEY.format(base=settings.OPENAI_BASE_URL or "default", model=model).replace(" ", "_")[:240]


def model_ratio(model: str) -> float | None:
    """The model's calibration factor from the server's own counts, None until one was reported."""
    try:
        value = cache.get(_ratio_key(model))
    except Exception:  # a cache outage leaves estimates uncalibrated (conservative), never breaks a call
        return None
    return float(value) if value else None


def observe(*, model: str, reported: int, messages: list[dict[str, Any]], raise_only: bool = False) -> None:
    """A non-streamed call of `model` whose prompt the server counted as `reported` tokens. With
    `raise_only` (a count of the text, not of what the server read), the factor may rise, never fall:
    estimates never drop below what a server's usage confirmed."""
    previous = model_ratio(model)
    ratio = tokens.calibrated_ratio(reported=reported, estimated=tokens.estimate_request(messages), previous=previous)
    if ratio is None or (raise_only and previous is not None and ratio < previous):
        return
    try:
        cache.set(_ratio_key(model), ratio, None)
    except Exception:
        logger.debug("could not keep the token calibration of %s", model)


# --- the server's tokenizer ----------------------------------------------------------------------------

# Each: the path under the server's root, and the request body for `text` and `model`.
_TOKENIZERS: tuple[tuple[str, Any], ...] = (
    ("/tokenize", lambda text, model: {"content": text}),  # llama.cpp's server
    ("/tokenize", lambda text, model: {"model": model, "prompt": text}),  # vLLM
    ("/extras/tokenize/count", lambda text, model: {"input": text, "model": model}),  # llama-cpp-python
)
_tokenized_at: dict[tuple[str, str], float] = {}
_tokenized_lock = threading.Lock()


def _count(answer: Any) -> int | None:
    if not isinstance(answer, dict):
        return None
    count = answer.get("count")
    if count is None and isinstance(answer.get("tokens"), list):
        count = len(answer["tokens"])
    return count if isinstance(count, int) and count > 0 else None


def tokenize_count(base_url: str, model: str, text: str) -> int | None:
    """How many tokens the server's own tokenizer makes of `text`, or None where it has no endpoint for it."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    for path, body in _TOKENIZERS:
        try:
            count = _count(_get(f"{root}{path}", body(text, model)))
        except Exception:  # not this kind of server, or not reachable: try the next
            continue
        if count:
            return count
    return None


def rendered_count(base_url: str, model: str, messages: list[dict[str, Any]]) -> int | None:
    """What the server reads for `messages`: its chat template's rendering (llama.cpp's `POST
    /apply-template`), counted by its tokenizer; None where it does not render for us."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    try:
        prompt = _get(f"{root}/apply-template", {"messages": messages}).get("prompt")
    except Exception:  # not llama.cpp's server
        return None
    return tokenize_count(base_url, model, prompt) if isinstance(prompt, str) and prompt else None


def _calibrate_by_tokenizing(base_url: str, model: str, messages: list[dict[str, Any]]) -> None:
    if (rendered := rendered_count(base_url, model, messages)) is not None:
        observe(model=model, reported=rendered, messages=messages)  # exactly what the server reads
        return
    text = "\n".join(tokens.content_text(m.get("content")) for m in messages)
    count = tokenize_count(base_url, model, text)
    if count is None:
        return
    # The tokenizer counts the text alone, not the template's rendering (llama-cpp-python's escapes
    # quotes and grows each turn): our framing is added, and the count may raise estimates, never lower them.
    framing = max(0, tokens.estimate_request(messages) - tokens.estimate_text(text))
    observe(model=model, reported=count + framing, messages=messages, raise_only=True)


def calibrate_by_tokenizing(*, model: str, messages: list[dict[str, Any]]) -> None:
    """A streamed request whose server sent no usage: have the server's tokenizer count its text, at most
    once per TOKENIZE_EVERY_SECONDS per model (blocking: at most PROBE_TIMEOUT_SECONDS per endpoint tried).

    Called once the stream has ended but while the request still holds its place in the provider queue
    (chat.model_queue): on a single-slot server (llama-cpp-python) any request, a tokenize one included,
    cuts off the reply being generated, so it must not be sent beside another request."""
    base_url = settings.OPENAI_BASE_URL
    if not base_url:
        return
    now = time.monotonic()
    with _tokenized_lock:
        if now - _tokenized_at.get((base_url, model), float("-inf")) < TOKENIZE_EVERY_SECONDS:
            return
        _tokenized_at[(base_url, model)] = now
    _calibrate_by_tokenizing(base_url, model, messages)
