"""What a provider said when it failed, made fit to show: trimmed, on one line, without secrets.

Users and admins see these messages (the chat's error line, the extraction run record), so they keep
the provider's own words ("Requested tokens (9731) exceed context window of 8192") rather than a bare
status code, but never a key, a bearer token or a password in a URL.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

MAX_CHARS = 300

_SECRETS = [
    (re.compile(r"(?i)\bbearer\s+[^\s'\",]+"), "Bearer [redacted]"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), "[redacted]"),
    (re.compile(r"(?i)\b(api[_-]?key|token|password|secret)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",&]+"), r"\1\2[redacted]"),
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1[redacted]@"),
]


def clean_provider_message(text: str, *, limit: int = MAX_CHARS) -> str:
    """`text` on one line, secrets replaced, cut to `limit` characters."""
    text = " ".join(str(text or "").split())
    key = settings.OPENAI_API_KEY
    if key and len(key) >= 4:
        text = text.replace(key, "[redacted]")
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def provider_error_code(body: Any) -> str:
    """The error's `code` (e.g. "context_length_exceeded") from an OpenAI-style body, or ""."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("code"):
            return str(inner["code"])
    return ""
