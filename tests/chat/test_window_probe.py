"""The window of llama-cpp-python, which states none: read from its refusal of an over-long probe, sent
once per process in the background with a place in the provider queue."""

from __future__ import annotations

import time
from typing import Any

import pytest

from chat.llm import window_probe, window_size
from tests.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_llama_cpp_pythons_window_is_read_from_its_refusal_of_an_over_long_probe(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_CONTEXT_FROM_SERVER, settings.LLM_MAX_CONCURRENCY = 32000, True, 1
    fake_openai.llama_cpp_python_window = 2048

    first = window_size.context_tokens("gemma-3-270m")  # the probe starts in the background
    deadline = time.monotonic() + 30
    while window_size.context_tokens("gemma-3-270m") == 32000 and time.monotonic() < deadline:
        time.sleep(0.1)

    assert first == 32000
    assert window_size.context_tokens("gemma-3-270m") == 2048
    assert len(fake_openai.completions_requests) == 1  # once per process and model
    assert fake_openai.completions_requests[0]["max_tokens"] == 1


def test_a_server_without_llama_cpp_pythons_routes_gets_no_probe(fake_openai: FakeOpenAIServer) -> None:
    assert window_probe.ask(fake_openai.base_url, "m") is None
    assert not window_probe.is_llama_cpp_python(fake_openai.base_url)
    assert fake_openai.completions_requests == [] and fake_openai.requests == []
