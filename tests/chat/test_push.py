"""chat.push: the one way to push to open pages, and its one rule when the channel layer is down."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chat import push


@pytest.fixture(autouse=True)
def working_layer() -> Iterator[None]:
    push.layer_reset()
    yield
    push.layer_reset()  # later tests start with a working layer


class Broken:
    calls = 0

    async def group_send(self, group: str, event: dict[str, Any]) -> None:
        Broken.calls += 1
        raise ConnectionError("redis is down")


def test_without_a_channel_layer_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(push, "get_channel_layer", lambda: None)
    assert push.send_event({"type": "session.close"}, user_id=1) is push.Outcome.NOBODY
    assert not push.layer_down()


def test_a_failing_layer_is_logged_not_raised_and_counts_as_down(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.setattr(push, "get_channel_layer", Broken)
    assert push.send_event({"type": "session.close"}, user_id=1) is push.Outcome.DOWN
    assert push.layer_down()
    assert "channel layer unavailable" in caplog.text


async def test_while_the_layer_is_down_only_skippable_events_are_not_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(push, "get_channel_layer", Broken)
    Broken.calls = 0
    await push.send_event_async({"type": "turn.end"}, group="g")
    assert push.layer_down() and Broken.calls == 1
    assert await push.send_event_async({"type": "turn.delta"}, group="g", skippable=True) is push.Outcome.DOWN
    assert Broken.calls == 1  # a reply's text waits: the page catches up from the full text
    await push.send_event_async({"type": "turn.end"}, group="g")
    assert Broken.calls == 2  # an end is always tried: a page that misses it would look stuck


async def test_an_event_goes_only_to_the_pages_the_lookup_names(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Layer:
        async def send(self, channel: str, event: dict[str, Any]) -> None:
            sent.append((channel, event))

    async def nobody(layer: Any) -> list[str]:
        return []

    async def two(layer: Any) -> list[str]:
        return ["a", "b"]

    monkeypatch.setattr(push, "get_channel_layer", Layer)
    event = {"type": "turn.end"}
    assert await push.send_event_async(event, group="g", lookup=nobody) is push.Outcome.NOBODY
    assert await push.send_event_async(event, group="g", lookup=two, prepare=lambda: False) is push.Outcome.NOBODY
    assert sent == []
    assert await push.send_event_async(event, group="g", lookup=two) is push.Outcome.SENT
    assert sent == [("a", event), ("b", event)]
