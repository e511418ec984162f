"""The provider adapter's policies: when a failed call is asked again, and when tools are dropped."""

from __future__ import annotations

import time

from chat.llm.base import LLMError
from chat.llm.retry import RETRY_BASE_SECONDS, retry_wait
from chat.llm.tools_fallback import ToolsFallback


def later() -> float:
    """A deadline a minute from now (computed per call: a module constant runs out in a long suite)."""
    return time.monotonic() + 60


def test_a_refused_connection_is_asked_again_with_a_growing_wait() -> None:
    refused = LLMError("Could not reach the model provider.", kind="connection")
    assert retry_wait(refused, attempt=0, max_retries=2, deadline=later()) == RETRY_BASE_SECONDS
    assert retry_wait(refused, attempt=1, max_retries=2, deadline=later()) == RETRY_BASE_SECONDS * 2
    assert retry_wait(refused, attempt=2, max_retries=2, deadline=later()) is None  # out of retries


def test_a_timeout_or_a_call_past_its_deadline_is_not_asked_again() -> None:
    timeout = LLMError("The model provider timed out.", kind="timeout")
    assert retry_wait(timeout, attempt=0, max_retries=2, deadline=later()) is None
    busy = LLMError("HTTP 503", kind="status", status=503)
    assert retry_wait(busy, attempt=0, max_retries=2, deadline=time.monotonic()) is None


def test_a_rejection_of_tools_drops_them_and_turns_them_off() -> None:
    fallback = ToolsFallback()
    one = fallback.request({"model": "m", "tools": [{}], "tool_choice": "auto"})
    assert one.drop_tools(LLMError("tools are not supported", kind="status", status=400))
    assert one.request == {"model": "m"} and not fallback.supported
    assert not one.drop_tools(LLMError("tools are not supported", kind="status", status=400))  # none left


def test_an_empty_answer_turns_tools_off_only_when_the_answer_without_them_comes() -> None:
    fallback = ToolsFallback()
    one = fallback.request({"model": "m", "tools": [{}], "tool_choice": "auto"})
    assert one.drop_tools(None) and fallback.supported  # suspect, not yet convicted
    one.answered()
    assert not fallback.supported
