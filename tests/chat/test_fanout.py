"""The fan-out to a conversation's pages: messages leave in the order the turn made them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat import push
from chat.turn import pages, registry, runner
from chat.turn.fanout import Fanout


@pytest.fixture
def delivered(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def deliver(self: Fanout, message: dict[str, Any]) -> None:
        sent.append(message)

    monkeypatch.setattr(Fanout, "_deliver", deliver)
    return sent


async def test_text_never_overtakes_the_reply_it_belongs_to(delivered: list[dict[str, Any]]) -> None:
    fanout = Fanout("c", 7)
    # All of it queued before the fan-out task first runs: a fast model, a start with nothing to wait for.
    fanout.send({"type": "turn.begin", "message_id": 7})
    fanout.pending += ["Hel", "lo"]
    fanout.send({"type": "turn.html", "message_id": 7})
    fanout.pending.append(" world")
    fanout.send({"type": "turn.end", "message_id": 7})
    fanout.close()
    await fanout.task

    assert [(m["type"], m.get("offset"), m.get("text")) for m in delivered] == [
        ("turn.begin", None, None),
        ("turn.delta", 0, "Hello"),
        ("turn.html", None, None),
        ("turn.delta", 5, " world"),
        ("turn.end", None, None),
    ]


async def test_text_is_batched_between_flushes(delivered: list[dict[str, Any]]) -> None:
    fanout = Fanout("c", 7)
    fanout.pending.append("first")
    fanout.wake.set()
    await asyncio.sleep(0.005)  # the first piece goes at once
    for piece in ("a", "b", "c"):
        fanout.pending.append(piece)
        fanout.wake.set()
    fanout.close()
    await fanout.task

    assert [m["text"] for m in delivered] == ["first", "abc"]
    assert [m["offset"] for m in delivered] == [0, 5]


async def test_html_is_rendered_for_a_page_and_a_failed_render_skips_only_that_message() -> None:
    shown: list[dict[str, Any]] = []
    unwatch = pages.watch("c", shown.append)  # a page of this process on the conversation
    try:
        fanout = Fanout("c", 7)

        def broken() -> str:
            raise ValueError("a template error")

        fanout.send({"type": "turn.begin", "message_id": 7, "html": lambda: "<p>begin</p>"})
        fanout.send({"type": "turn.html", "message_id": 7, "html": broken})
        fanout.send({"type": "turn.end", "message_id": 7, "html": lambda: "<p>end</p>"})
        fanout.close()
        await fanout.task
    finally:
        unwatch()

    assert [(m["type"], m["html"]) for m in shown] == [("turn.begin", "<p>begin</p>"), ("turn.end", "<p>end</p>")]


async def test_nothing_is_rendered_when_no_page_follows_the_conversation() -> None:
    rendered: list[str] = []

    def render() -> str:
        rendered.append("begin")
        return "<p>begin</p>"

    fanout = Fanout("nobody-watches", 7)  # an API client's turn: it needs no HTML
    fanout.send({"type": "turn.begin", "message_id": 7, "html": render})
    fanout.close()
    await fanout.task
    assert rendered == []


async def test_a_slow_channel_layer_is_not_taken_for_one_that_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    class SlowLayer:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            await asyncio.sleep(1)

    monkeypatch.setattr(push, "get_channel_layer", lambda: SlowLayer())
    monkeypatch.setattr(push, "LAYER_TIMEOUT_SECONDS", 0.01)
    push.layer_reset()
    fanout = Fanout("c", 7)
    fanout.close()
    await fanout.task

    for _ in range(push.LAYER_SLOW_LIMIT - 1):
        await fanout._deliver({"type": "turn.delta", "message_id": 7, "offset": 0, "text": "x"})
    assert not push.layer_down()  # slow, still used
    await fanout._deliver({"type": "turn.delta", "message_id": 7, "offset": 1, "text": "y"})
    assert push.layer_down()  # not answering at all: pages fall back to polling
    push.layer_reset()  # later tests start with a working layer


def test_text_is_batched_longer_when_a_process_writes_many_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry.running_turns, "turns", {str(n): object() for n in range(registry.FLUSH_TURNS)})
    assert registry.flush_interval() == registry.FLUSH_SECONDS
    monkeypatch.setattr(registry.running_turns, "turns", {str(n): object() for n in range(registry.FLUSH_TURNS * 5)})
    assert registry.flush_interval() == pytest.approx(registry.FLUSH_SECONDS * 5)


def test_a_reply_pauses_between_reads_only_when_a_process_writes_many(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry.running_turns, "turns", {str(n): object() for n in range(registry.FLUSH_TURNS)})
    assert registry.read_pause() == 0.0
    monkeypatch.setattr(registry.running_turns, "turns", {str(n): object() for n in range(registry.FLUSH_TURNS * 5)})
    assert registry.read_pause() == pytest.approx(registry.flush_interval() / 2)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pause", [0.0, 0.2])
async def test_after_a_pause_a_reply_reads_every_piece_that_came_meanwhile_at_once(
    user: Any, conversation: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, pause: float
) -> None:
    from tests.chat.fake_tools import ClockedModel

    settings.LLM_BACKEND = "tests.chat.fake_tools.ClockedModel"
    monkeypatch.setattr(runner, "read_pause", lambda: pause)
    ClockedModel.waits.clear()
    running = await runner.start_turn(user=user, conversation=conversation, content="Go on")
    final = await asyncio.wait_for(running.result(), 10)

    assert final.assistant_message is not None
    assert final.assistant_message.content.split() == [f"w{i}" for i in range(20)]
    # 20 pieces over 0.4 s: read one by one, nearly every read waits for one; with pauses, a few do.
    [waits] = ClockedModel.waits
    assert waits >= 12 if pause == 0 else waits <= 5
