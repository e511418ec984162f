"""The `openai` package's failures as `LLMError`: the provider's own words kept (chat.llm.errors), a
refusal for length told apart with the window it states."""

from __future__ import annotations

import re
from typing import Any

import httpx2  # the `openai` package's HTTP library
import openai
from django.utils.translation import gettext as _

from chat.llm.base import LLMError
from chat.llm.errors import clean_provider_message, provider_error_code, provider_error_text

# How providers word a refusal for length: OpenAI and vLLM ("maximum context length is 8192 tokens"),
# llama.cpp ("exceeds the available context size", "exceed context window of 8192"), others.
_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?(length|window|size)|maximum (context )?length|too many tokens|prompt is too long", re.I
)
_WINDOW_TEXT = re.compile(r"(?:maximum context length|context (?:length|window|size)) (?:is|of) (\d+)", re.I)


def _context_overflow(exc: openai.APIStatusError, said: str) -> LLMError | None:
    """A refusal for length (HTTP 400 with code `context_length_exceeded`, or saying so), else None."""
    code = provider_error_code(exc.body)
    if exc.status_code not in (400, 413) or (code != "context_length_exceeded" and not _OVERFLOW_TEXT.search(said)):
        return None
    stated = _WINDOW_TEXT.search(said)
    if said:
        message = _("The conversation is longer than the model can read at once (%(said)s)") % {"said": said}
    else:
        message = _("The conversation is longer than the model can read at once.")
    window = int(stated.group(1)) if stated else None
    return LLMError(message, kind="context_length", context_window=window, status=exc.status_code, code=code)


def as_llm_error(exc: Exception) -> LLMError:
    if isinstance(exc, LLMError):
        return exc
    # The raw stream's reads raise the HTTP library's own timeout, not the SDK's.
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return LLMError(_("The model provider timed out."), kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = clean_provider_message(str(exc.__cause__ or ""))
        if cause:
            return LLMError(_("Could not reach the model provider (%(cause)s).") % {"cause": cause}, kind="connection")
        return LLMError(_("Could not reach the model provider."), kind="connection")
    if isinstance(exc, httpx2.TransportError):  # the connection dropped while the answer was being read
        return LLMError(
            _("The connection to the model provider was dropped before its answer was complete."), kind="connection"
        )
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, openai.APIError):
        said = clean_provider_message(_said(exc))
        text = provider_error_text(said)
        return LLMError(text, kind="status", code=provider_error_code(exc.body))
    # Anything else (a body that is not JSON, an unexpected shape) means the answer was garbage.
    name = exc.__class__.__name__
    return LLMError(
        _("The model provider sent an answer that could not be read (%(name)s).") % {"name": name}, kind="bad_response"
    )


def _status_error(exc: openai.APIStatusError) -> LLMError:
    said = clean_provider_message(_said(exc))
    if (overflow := _context_overflow(exc, said)) is not None:
        return overflow
    if said:
        text = _("The model provider answered HTTP %(status)d: %(said)s") % {"status": exc.status_code, "said": said}
    else:
        text = _("The model provider answered HTTP %(status)d.") % {"status": exc.status_code}
    return LLMError(text, kind="status", status=exc.status_code, code=provider_error_code(exc.body))


def _said(exc: openai.APIError) -> str:
    """The provider's own words: the error body's message (OpenAI, vLLM, llama.cpp) or detail (FastAPI)."""
    said = _said_in(exc.body)
    if said:
        return said
    if isinstance(exc, openai.APIStatusError):
        try:
            return exc.response.text
        except Exception:  # a streamed body that was never read
            return ""
    return exc.message


def _said_in(body: Any) -> str:
    if not isinstance(body, dict):
        return body if isinstance(body, str) and body.strip() else ""
    inner = body.get("error", body)
    if isinstance(inner, dict):
        found = next((str(inner[key]) for key in ("message", "detail", "msg") if inner.get(key)), "")
        if found:
            return found
    elif inner:
        return str(inner)
    return str(body["detail"]) if body.get("detail") else ""
