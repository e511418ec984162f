"""The web server's start (ASGI lifespan): the model is built before the first turn, so a burst of first
turns on a fresh server does not wait for it."""

from __future__ import annotations

import asyncio
from typing import Any

from chat import llm
from chat.turn import runner


def test_warm_up_builds_the_configured_model_once(settings: Any) -> None:
    settings.LLM_BACKEND = "demo"
    llm.warm_up()

    assert llm._build.cache_info().currsize == 1
    assert llm.get_chat_model() is llm.get_chat_model()


def test_the_server_builds_the_model_before_it_reports_started(monkeypatch: Any) -> None:
    built: list[str] = []
    monkeypatch.setattr(runner, "warm_up", lambda: built.append("model"))
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

        await runner.lifespan({"type": "lifespan"}, receive, send)

    asyncio.run(lifespan())
    runner._sweeper = None

    assert sent[0] == {"type": "lifespan.startup.complete", "built": ["model"]}


async def _nothing() -> None:
    return None
