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


def test_tools_offered_again_after_the_pause_are_turned_off_again_by_a_failure_before_any_answer() -> None:
    fallback = ToolsFallback()
    fallback.disable("an empty answer when tools were offered")
    fallback.off_until = 0.0  # the pause is over: offered again, on trial
    assert fallback.supported
    one = fallback.request({"model": "m", "tools": [{}], "tool_choice": "auto"})
    one.failed(LLMError("The model did not start answering within 60 s.", kind="timeout"))
    assert not fallback.supported


def test_tools_on_trial_dropped_after_an_empty_answer_are_turned_off_whatever_the_retry_does() -> None:
    fallback = ToolsFallback()
    fallback.disable("an empty answer when tools were offered")
    fallback.off_until = 0.0
    one = fallback.request({"model": "m", "tools": [{}], "tool_choice": "auto"})
    assert one.drop_tools(None)
    one.failed(LLMError("Could not reach the model provider.", kind="connection"))  # the retry without them
    assert not fallback.supported


def test_tools_answered_on_trial_stay_and_a_first_failure_never_turns_them_off() -> None:
    fallback = ToolsFallback()
    timeout = LLMError("The model did not start answering within 60 s.", kind="timeout")
    fallback.request({"model": "m", "tools": [{}]}).failed(timeout)
    assert fallback.supported  # never found wanting: one timeout says nothing about tools
    fallback.disable("an empty answer when tools were offered")
    fallback.off_until = 0.0
    fallback.request({"model": "m", "tools": [{}]}).answered()
    fallback.request({"model": "m", "tools": [{}]}).failed(timeout)
    assert fallback.supported  # they worked again since
