"""The web server's start (ASGI lifespan): the one-time work on a turn's way (chat.turn.warm) is done before
the server reports itself started, off its event loop, so a burst of first turns on a fresh server does not
wait for it there."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

import pytest
from django.template import engines
from django.urls import clear_url_caches, get_resolver

from chat import llm
from chat.models import Conversation
from chat.turn import context_budget, runner, warm
from chat.turn.agent import Turn


def test_warm_up_builds_the_configured_model_once(settings: Any) -> None:
    settings.LLM_BACKEND = "demo"
    llm.warm_up()

    assert llm._build.cache_info().currsize == 1
    assert llm.get_chat_model() is llm.get_chat_model()


def test_the_server_warms_up_before_it_reports_started_off_its_event_loop(monkeypatch: Any) -> None:
    built: list[str] = []
    loops: list[asyncio.AbstractEventLoop] = []
    serving: list[asyncio.AbstractEventLoop] = []

    def warm_up(loop: asyncio.AbstractEventLoop) -> None:
        with pytest.raises(RuntimeError):  # a thread of its own: no event loop runs here
            asyncio.get_running_loop()
        loops.append(loop)
        built.append("model")

    monkeypatch.setattr(warm, "warm_up", warm_up)
    monkeypatch.setattr(runner, "recover_once", _nothing)
    monkeypatch.setattr(runner, "recover_forever", _nothing)
    monkeypatch.setattr(runner, "shutdown", _nothing)
    sent: list[dict[str, Any]] = []

    async def lifespan() -> None:
        messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

        async def receive() -> dict[str, Any]:
            return next(messages)

        async def send(message: dict[str, Any]) -> None:
            sent.append({**message, "built": list(built)})

        serving.append(asyncio.get_running_loop())
        await runner.lifespan({"type": "lifespan"}, receive, send)

    asyncio.run(lifespan())
    runner._sweeper = None

    assert sent[0] == {"type": "lifespan.startup.complete", "built": ["model"]}
    assert loops == serving  # what the model's streams need is made for the loop that serves the turns


@pytest.fixture
def window(monkeypatch: Any) -> list[str]:
    """The model's window, looked up without asking a provider: the lookups, in order."""
    asked: list[str] = []

    def context_tokens(model: str | None = None) -> int:
        asked.append("window")
        return 4096

    monkeypatch.setattr(warm.window_size, "context_tokens", context_tokens)
    return asked


def test_warm_up_imports_the_urlconf_and_compiles_the_live_pages_partials(settings: Any, window: list[str]) -> None:
    settings.LLM_BACKEND = "demo"
    clear_url_caches()  # as in a fresh process: the first `{% url %}` would import every app's views and API
    loader = cast(Any, engines["django"]).engine.template_loaders[0]
    loader.reset()
    resolver: Any = get_resolver()
    assert "url_patterns" not in resolver.__dict__

    warm.warm_up(asyncio.new_event_loop())

    assert "url_patterns" in resolver.__dict__ and resolver._populated
    assert {"chat/_turn_start.html", "chat/_message.html", "chat/_streaming_text.html"} <= set(
        loader.get_template_cache
    )
    assert window == ["window"]


def test_warm_up_makes_the_openai_client_of_the_serving_loop(settings: Any, window: list[str]) -> None:
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = "test"
    loop = asyncio.new_event_loop()

    warm.warm_up(loop)

    model: Any = llm.get_chat_model()
    client = model._async_clients[loop]

    async def in_the_loop() -> Any:
        return model._async_client()

    try:
        assert loop.run_until_complete(in_the_loop()) is client  # the first turn's stream makes none
    finally:
        loop.close()


@pytest.mark.django_db(transaction=True)
async def test_a_turns_context_budget_is_worked_out_off_the_event_loop(
    fake_model: Any, user: Any, conversation: Conversation, monkeypatch: Any
) -> None:
    """The model's window may be asked of the provider (chat.llm.window_size): never on the loop every turn
    and page of the process shares."""
    threads: list[threading.Thread] = []
    budget_of = context_budget.budget_of

    def recorded(**kwargs: Any) -> context_budget.Budget:
        threads.append(threading.current_thread())
        return budget_of(**kwargs)

    monkeypatch.setattr(context_budget, "budget_of", recorded)
    fake_model.reply("Hi")

    turn = await Turn.begin(user=user, conversation=conversation, content="Hello")
    async for _ in turn.events():
        pass

    assert threads and threading.current_thread() not in threads


async def _nothing() -> None:
    return None
