"""Offline token estimates: how much of the model's context window a text or a whole request takes.

No tokenizer is downloaded or bundled: the estimate is deliberately conservative, so a request that
fits by our count fits the provider's too, for the common tokenizers (OpenAI's, Llama's, Qwen's).

- CJK characters (Chinese, Japanese kana, Korean Hangul, full-width forms) count one token each;
- other ASCII text counts one token per 3 characters (English averages about 4 per token);
- other non-ASCII text counts one token per 2 bytes of UTF-8 (Cyrillic, Greek, accents, emoji);
- every message adds a small overhead for its role and separators, and tool schemas count as the JSON
  the provider receives.

    estimate_text("Hello there")                  # 4
    estimate_request(messages, tools=schemas)      # the whole request's prompt

When a provider reports `usage.prompt_tokens`, `calibrated_ratio` turns the reported figure and our
estimate of the same request into a per-conversation factor; `scaled(estimate, ratio)` applies it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

#: tokens a chat message costs beyond its content (role, separators), as the common chat templates do
MESSAGE_OVERHEAD = 4
#: tokens every request costs (the reply's priming)
REQUEST_OVERHEAD = 3
#: tokens per tool call in an assistant message beyond its name and arguments
TOOL_CALL_OVERHEAD = 8
#: tokens per tool schema beyond its JSON text
TOOL_SCHEMA_OVERHEAD = 8
#: bounds for a calibration factor: a provider report outside them is more likely a bug than a tokenizer
RATIO_MIN, RATIO_MAX = 0.5, 4.0
#: margin kept over a provider's own count, so a calibrated estimate stays an upper bound
RATIO_MARGIN = 1.1

_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    (0x3200, 0x4DBF),  # enclosed CJK, CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables and Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFFEF),  # half-width and full-width forms
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


def estimate_text(text: str) -> int:
    """A conservative token count of `text` (0 for the empty string)."""
    if not text:
        return 0
    ascii_chars = cjk = other_bytes = 0
    for char in text:
        code = ord(char)
        if code < 0x80:
            ascii_chars += 1
        elif code >= 0x1100 and _is_cjk(code):
            cjk += 1
        else:
            other_bytes += len(char.encode("utf-8", "surrogatepass"))
    return cjk + math.ceil(ascii_chars / 3) + math.ceil(other_bytes / 2)


def _content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (only text parts are counted)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or ""))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def estimate_message(message: dict[str, Any]) -> int:
    """One chat message: its content, its tool calls (name and arguments), its overhead."""
    tokens = MESSAGE_OVERHEAD + estimate_text(_content_text(message.get("content")))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        tokens += TOOL_CALL_OVERHEAD + estimate_text(str(call.get("id") or ""))
        tokens += estimate_text(str(function.get("name") or "")) + estimate_text(str(function.get("arguments") or ""))
    if message.get("tool_call_id"):
        tokens += estimate_text(str(message["tool_call_id"]))
    if message.get("name"):
        tokens += estimate_text(str(message["name"]))
    return tokens


def estimate_messages(messages: Iterable[dict[str, Any]]) -> int:
    """A list of chat messages, without the per-request overhead (for a part of the agent state)."""
    return sum(estimate_message(m) for m in messages)


def estimate_tools(tools: list[dict[str, Any]] | None) -> int:
    """Tool schemas, counted as the JSON the provider receives."""
    if not tools:
        return 0
    return sum(TOOL_SCHEMA_OVERHEAD + estimate_text(json.dumps(t, ensure_ascii=False)) for t in tools)


def estimate_request(messages: Iterable[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """The prompt of one chat request: every message, the tool schemas and the request overhead."""
    return REQUEST_OVERHEAD + estimate_messages(messages) + estimate_tools(tools)


def scaled(estimate: int, ratio: float | None) -> int:
    """`estimate` corrected by a conversation's calibration factor (None: not calibrated yet)."""
    if not ratio:
        return estimate
    return math.ceil(estimate * ratio)


def calibrated_ratio(*, reported: int, estimated: int, previous: float | None = None) -> float | None:
    """The calibration factor after a provider reported `reported` prompt tokens for a request we
    estimated at `estimated`. A factor that rises is taken at once (an estimate must not stay too low);
    one that falls is approached half-way, so one odd report cannot make estimates optimistic."""
    if reported <= 0 or estimated <= 0:
        return previous
    observed = min(max(reported / estimated * RATIO_MARGIN, RATIO_MIN), RATIO_MAX)
    start = 1.0 if previous is None else previous  # uncalibrated estimates act as a factor of 1
    if observed >= start:
        return round(observed, 4)
    return round((start + observed) / 2, 4)
