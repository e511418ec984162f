"""Token counts the server confirms (chat.llm.server_facts): the window it states when CHAT_CONTEXT_TOKENS
is not set, calibration per model from non-streamed usage and from the server's tokenizer, and one
background compaction per state."""

from __future__ import annotations

from typing import Any

import pytest

from chat.llm import TextDelta, get_chat_model, server_facts, window_size
from chat.llm.tokens import estimate_request
from chat.models import AgentState
from chat.services import conversation_create
from chat.turn import compaction, context_budget
from tests.fake_openai import FakeOpenAIServer, FakeResponse

USER = [{"role": "user", "content": "Hello there, how are you today? " * 20}]


@pytest.fixture(autouse=True)
def fresh() -> Any:
    server_facts.server_window.cache_clear()
    server_facts._tokenized_at.clear()
    yield
    server_facts.server_window.cache_clear()
    server_facts._tokenized_at.clear()


def test_the_window_vllm_states_is_used_when_chat_context_tokens_is_not_set(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.CHAT_MODEL, settings.CHAT_CONTEXT_TOKENS = "fake-model", 32000
    fake_openai.model_fields = {"max_model_len": 4096}
    settings.CHAT_CONTEXT_FROM_SERVER = True
    assert window_size.context_tokens() == 4096
    assert context_budget.budget_of(context_window=None, token_ratio=None).window == 4096


def test_the_window_llama_cpp_states_in_props_is_used(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.CHAT_CONTEXT_FROM_SERVER = True
    fake_openai.props = {"default_generation_settings": {"n_ctx": 2048}}
    assert window_size.context_tokens() == 2048


def test_a_set_chat_context_tokens_wins_and_a_silent_server_leaves_the_default(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    fake_openai.props = {"n_ctx": 2048}
    settings.CHAT_CONTEXT_FROM_SERVER, settings.CHAT_CONTEXT_TOKENS = False, 8192
    assert window_size.context_tokens() == 8192
    fake_openai.props = None
    settings.CHAT_CONTEXT_FROM_SERVER = True
    assert window_size.context_tokens() == 8192


def test_a_non_streamed_calls_usage_calibrates_that_model_and_never_below_the_servers_count(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.queue(FakeResponse('{"operations": []}'))
    get_chat_model().complete_json(messages=USER, model="judge-model", temperature=0.3, timeout=5, max_tokens=10)

    ratio = server_facts.model_ratio("judge-model")
    assert ratio is not None and server_facts.model_ratio("other-model") is None  # per model
    # The fake counts words as tokens, far fewer than our estimate: the factor shrinks the estimate, yet a
    # calibrated estimate stays above the server's count.
    assert ratio < 1 and estimate_request(USER) * ratio >= fake_openai.prompt_sizes[0]


async def _stream_all(**request: Any) -> str:
    return "".join([c.text async for c in get_chat_model().stream(**request) if isinstance(c, TextDelta)])


async def test_a_stream_without_usage_is_calibrated_by_the_servers_tokenizer_once_in_a_while(
    settings: Any,
) -> None:
    server = FakeOpenAIServer(single_slot=True).start()  # like llama.cpp: no usage in streams
    server.tokenize = True
    settings.LLM_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.base_url, "test-key"
    settings.CHAT_MODEL, settings.LLM_MAX_RETRIES = "small-model", 0
    try:
        server.queue(FakeResponse("Fine, thanks."))
        assert await _stream_all(messages=USER) == "Fine, thanks."
        ratio = server_facts.model_ratio("small-model")
        assert len(server.tokenize_requests) == 1 and ratio is not None
        # The fake's tokenizer counts words, far fewer than our estimate: the factor shrinks the estimate,
        # yet the calibrated estimate stays above what the server counted for the request.
        assert ratio < 1 and estimate_request(USER) * ratio >= server.prompt_sizes[0]

        server.queue(FakeResponse("Again."))
        await _stream_all(messages=USER)
        assert len(server.tokenize_requests) == 1  # not again for TOKENIZE_EVERY_SECONDS
    finally:
        server.stop()


async def test_a_server_without_a_tokenizer_endpoint_leaves_estimates_alone_and_the_reply_whole(
    settings: Any,
) -> None:
    server = FakeOpenAIServer(single_slot=True).start()
    settings.LLM_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.base_url, "test-key"
    settings.CHAT_MODEL, settings.LLM_MAX_RETRIES = "plain-model", 0
    try:
        server.queue(FakeResponse("Hello."))
        assert await _stream_all(messages=USER) == "Hello."
        assert server_facts.model_ratio("plain-model") is None and not server.tokenize_requests
    finally:
        server.stop()


@pytest.mark.django_db
def test_background_compaction_never_runs_twice_for_the_same_state(user: Any, settings: Any) -> None:
    conversation = conversation_create(user=user)
    state = AgentState.objects.get(conversation=conversation)
    state.context = [{"role": "user", "content": "word " * 400}, {"role": "assistant", "content": "ok " * 400}] * 4
    state.version = 3
    state.compacted_version = 3
    state.save()
    settings.CHAT_CONTEXT_TOKENS = 1000
    queued: list[Any] = []

    assert not compaction.schedule_if_needed(conversation_id=conversation.pk, enqueue=queued.append)
    assert compaction.compact_in_background(conversation_id=conversation.pk) == "not_needed"
    AgentState.objects.filter(pk=state.pk).update(version=4)
    assert compaction.schedule_if_needed(conversation_id=conversation.pk, enqueue=queued.append)


QUOTED = [{"role": "user", "content": "I'd say it's the user's choice, isn't it? " * 20}]


async def test_where_the_server_renders_the_chat_template_its_rendering_is_what_is_counted(settings: Any) -> None:
    server = FakeOpenAIServer(single_slot=True).start()  # llama.cpp: no usage in streams, /apply-template
    server.tokenize = server.apply_template = True
    settings.LLM_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.base_url, "test-key"
    settings.CHAT_MODEL, settings.LLM_MAX_RETRIES = "rendering-model", 0
    try:
        server.queue(FakeResponse("Fine."))
        await _stream_all(messages=QUOTED)
        counted = server.tokenize_requests[0]["content"]
        assert "<|im_start|>user" in counted and "&#x27;" in counted  # the template's escaped rendering
        ratio = server_facts.model_ratio("rendering-model")
        assert ratio is not None and estimate_request(QUOTED) * ratio >= len(counted.split())
    finally:
        server.stop()


def test_a_count_of_the_text_alone_never_lowers_a_factor_the_servers_usage_confirmed(settings: Any) -> None:
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    estimate = estimate_request(USER)
    server_facts.observe(model="m", reported=estimate, messages=USER)  # usage of a non-streamed call
    confirmed = server_facts.model_ratio("m")

    server_facts.observe(model="m", reported=estimate // 2, messages=USER, raise_only=True)  # the text alone
    assert server_facts.model_ratio("m") == confirmed
    server_facts.observe(model="m", reported=estimate * 2, messages=USER, raise_only=True)
    assert (server_facts.model_ratio("m") or 0) > (confirmed or 0)
