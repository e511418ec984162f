"""What a provider said when it failed, made fit to show: trimmed, on one line, without secrets.

Users and admins see these messages (the chat's error line, the extraction run record), so they keep
the provider's own words ("Requested tokens (9731) exceed context window of 8192") rather than a bare
status code, but never a key, a bearer token or a password in a URL.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from chat.llm.base import LLMError

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


# --- what the chat shows: a plain sentence, and the provider's own words behind "Details" ---------

_HTTP = re.compile(r"^The model provider answered HTTP (?P<status>\d{3})(?:: (?P<said>.*)|\.)$", re.S)
_REPORTED = re.compile(r"^The model provider reported an error: (?P<said>.*)$", re.S)
_UNREACHABLE = re.compile(r"^Could not reach the model provider \((?P<said>.*)\)\.$", re.S)
_TOO_LONG = re.compile(r"^The conversation is longer than the model can read at once \((?P<said>.*)\)$", re.S)


def provider_error_text(said: str) -> str:
    if said:
        return _("The model provider reported an error: %(said)s") % {"said": said}
    return _("The model provider reported an error.")


def _status_sentence(status: int) -> str:
    if status in (401, 403):
        return _("The model provider refused this app’s credentials. Whoever runs Memora should check its API key.")
    if status == 404:
        return _("The model provider does not know the model this app asked for.")
    if status == 429:
        return _("The model provider is busy or over its rate limit. Try again in a moment.")
    if status >= 500:
        return _("The model provider had a problem on its side. Try again in a moment.")
    return _("The model provider refused the request.")


# The same errors as saved in another language (a reply is saved in its user's language): each shape's
# translation, with its placeholders made into groups.
_SHAPES = (
    ("The model provider answered HTTP %(status)d: %(said)s", "http"),
    ("The model provider answered HTTP %(status)d.", "http"),
    ("The model provider reported an error: %(said)s", "reported"),
    ("Could not reach the model provider (%(cause)s).", "unreachable"),
    ("The conversation is longer than the model can read at once (%(said)s)", "too_long"),
)


@lru_cache(maxsize=1)
def _translated_shapes() -> list[tuple[re.Pattern[str], str]]:
    shapes = []
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            for msgid, kind in _SHAPES:
                pattern = re.escape(gettext(msgid)).replace(re.escape("%(status)d"), r"(?P<status>\d{3})")
                pattern = pattern.replace(re.escape("%(said)s"), "(?P<said>.*)")
                pattern = pattern.replace(re.escape("%(cause)s"), "(?P<said>.*)")
                shapes.append((re.compile(f"^{pattern}$", re.S), kind))
    return shapes


def _saved_shape(text: str) -> tuple[str, re.Match[str]] | None:
    english = ((_HTTP, "http"), (_REPORTED, "reported"), (_UNREACHABLE, "unreachable"), (_TOO_LONG, "too_long"))
    for pattern, kind in english:
        if m := pattern.match(text):
            return kind, m
    return next(((kind, m) for pattern, kind in _translated_shapes() if (m := pattern.match(text))), None)


def error_for_people(text: str) -> tuple[str, str]:
    """A saved reply's error as (a plain sentence, the provider's own words or ""): the chat shows the
    sentence and keeps the words behind a "Details" toggle, whichever language the error was saved in.
    Errors written by this app pass through."""
    text = text or ""
    shape = _saved_shape(text)
    if shape is None:
        return text, ""
    kind, m = shape
    said = m.groupdict().get("said") or ""
    if kind == "http":
        return _status_sentence(int(m["status"])), f"HTTP {m['status']}" + (f": {said}" if said else "")
    if kind == "reported":
        return _("The model provider reported an error."), said
    if kind == "unreachable":
        return _("Could not reach the model provider."), said
    return _("The conversation is longer than the model can read at once."), said


def deadline_error(got_token: bool, *, stalled: bool = False) -> LLMError:
    """A streamed call past a deadline: the stall, the whole step, or the first token's."""
    if stalled:
        limit = float(settings.LLM_STALL_TIMEOUT)
        text = _("The model provider stopped sending the reply: nothing arrived for %(seconds)s s.")
        return LLMError(text % {"seconds": f"{limit:g}"}, kind="timeout")
    if got_token:
        limit = float(settings.CHAT_TURN_TIMEOUT)
        return LLMError(
            _("The reply did not finish within the time limit (%(seconds)s s).") % {"seconds": f"{limit:g}"},
            kind="timeout",
        )
    limit = float(settings.LLM_FIRST_TOKEN_TIMEOUT)
    return LLMError(
        _("The model provider sent no reply within %(seconds)s s.") % {"seconds": f"{limit:g}"}, kind="timeout"
    )
