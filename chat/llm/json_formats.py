"""How a JSON answer is asked for, server by server: the answer's JSON schema where the server takes it,
else JSON mode.

1. `{"type": "json_schema", "json_schema": {"name", "schema", "strict": false}}`: OpenAI, vLLM,
   llama.cpp's server, Ollama. Grammar-constrained servers then cannot answer outside the shape, which
   is what makes a small model's judge answers usable at all.
2. `{"type": "json_object", "schema": {...}}`: llama-cpp-python, which refuses `json_schema` (HTTP 422)
   but builds a grammar from a `schema` beside JSON mode (others ignore the extra key).
3. `{"type": "json_object"}`: JSON mode alone.

A server that refuses a form (HTTP 400/422 naming the response format or the schema; llama-cpp-python
answers its validation error with HTTP 500) is asked again at once with the next, and the form it took
is remembered for that model in this process.
"""

from __future__ import annotations

import threading
from typing import Any

from chat.llm.base import LLMError

JSON_MODE: dict[str, Any] = {"type": "json_object"}
_REFUSAL_HINTS = ("response_format", "json_schema", "schema", "json_object")

_taken: dict[str, int] = {}
_lock = threading.Lock()


def formats(schema: dict[str, Any] | None, *, name: str = "answer") -> list[dict[str, Any]]:
    """The response formats to try for `schema`, best first (JSON mode alone without one)."""
    if not schema:
        return [JSON_MODE]
    return [
        {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}},
        {"type": "json_object", "schema": schema},
        JSON_MODE,
    ]


def first_choice(key: str) -> int:
    """Where to start for `key` (a server and model): the form it took last time."""
    with _lock:
        return _taken.get(key, 0)


def remember(key: str, index: int) -> None:
    with _lock:
        _taken[key] = index


def refused(error: LLMError) -> bool:
    """Whether the server refused the request for its response format (not for its size or anything else)."""
    if error.kind != "status" or error.status not in (400, 422, 500) or error.too_long:
        return False
    said = str(error).lower()
    return any(hint in said for hint in _REFUSAL_HINTS)
