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
import re
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

# CJK characters (Chinese, Japanese kana, Korean Hangul, full-width forms): one token each.
_CJK = re.compile(
    "[\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    "\u3200-\u4dbf"  # enclosed CJK, CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7ff"  # Hangul syllables and Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms
    "\U00020000-\U0003ffff]+"  # CJK extensions B and later
)
_ASCII = re.compile(r"[\x00-\x7f]+")


def estimate_text(text: str) -> int:
    """A conservative token count of `text` (0 for the empty string). Runs at C speed (regular
    expressions, no Python loop over characters): it is called on whole agent states every turn."""
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) / 3)
    non_ascii = _ASCII.sub("", text)
    other = _CJK.sub("", non_ascii)
    cjk = len(non_ascii) - len(other)
    other_bytes = len(other.encode("utf-8", "surrogatepass"))
    return cjk + math.ceil((len(text) - len(non_ascii)) / 3) + math.ceil(other_bytes / 2)


def content_text(content: Any) -> str:
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
    tokens = MESSAGE_OVERHEAD + estimate_text(content_text(message.get("content")))
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
