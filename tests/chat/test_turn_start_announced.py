"""A turn's start is announced (to its pages and API listeners) once its model request is written: made
earlier, its page fragment and API event would hold up the request on the event loop (chat.turn.runner)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat.turn import runner
from tests.chat.fake_tools import WrittenModel

pytestmark = pytest.mark.django_db(transaction=True)


async def run_turn(user: Any, conversation: Any) -> tuple[list[str], float]:
    """The turn's events as a listener gets them, and how long after the turn began the start came."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    running = await runner.start_turn(user=user, conversation=conversation, content="Hi")
    events = running.listen()
    got: list[str] = []
    start_after = 0.0
    while (event := await asyncio.wait_for(events.get(), 10)) is not None:
        if event.type == "start":
            start_after = loop.time() - began
            WrittenModel.log.append("listener: start")
        got.append(event.type)
    return got, start_after


@pytest.fixture
def model(settings: Any, monkeypatch: pytest.MonkeyPatch) -> type[WrittenModel]:
    settings.LLM_BACKEND = "tests.chat.fake_tools.WrittenModel"
    monkeypatch.setattr(WrittenModel, "log", [])
    # A hold and a think far longer than the turn's own start (its transaction, slow on a loaded machine), so
    # "as soon as written" and "at the hold's end" stay apart whatever the machine is doing.
    monkeypatch.setattr(runner, "START_HOLD_SECONDS", 1.0)
    monkeypatch.setattr(WrittenModel, "think", 2.0)
    return WrittenModel


async def test_the_start_is_announced_when_the_request_is_written_before_the_reply_comes(
    user: Any, conversation: Any, model: type[WrittenModel]
) -> None:
    got, start_after = await run_turn(user, conversation)
    assert got == ["start", "delta", "done"]
    assert model.log == ["written", "listener: start", "first piece"]
    assert start_after < runner.START_HOLD_SECONDS  # as soon as written (0.02 s), not at the hold's end (1 s)


async def test_a_request_never_reported_written_holds_the_start_no_longer_than_the_hold(
    user: Any, conversation: Any, model: type[WrittenModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "reports", False)  # a model that does not go through the HTTP client's hook
    got, start_after = await run_turn(user, conversation)
    assert got == ["start", "delta", "done"]
    assert runner.START_HOLD_SECONDS <= start_after < model.think  # not until the first piece


async def test_a_reply_that_comes_at_once_still_follows_its_start(
    user: Any, conversation: Any, model: type[WrittenModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "reports", False)
    monkeypatch.setattr(model, "write_after", 0.0)
    monkeypatch.setattr(model, "think", 0.0)
    got, start_after = await run_turn(user, conversation)
    assert got == ["start", "delta", "done"]
    assert start_after < runner.START_HOLD_SECONDS  # the first piece brought it out
