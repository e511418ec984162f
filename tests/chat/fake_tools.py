"""Small in-process fakes for chat tests: a recording tool and models that fail or stall on purpose."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from chat.extensions import TurnContext
from chat.llm import ChatModel, Messages, StreamChunk, TextDelta


@dataclass
class EchoTool:
    """A tool that records its calls; `block` makes it wait (in its worker thread) until released."""

    name: str = "lookup"
    description: str = "Look something up."
    parameters: dict[str, Any] | None = None
    result: str = "RESULT-42"
    block: threading.Event | None = None

    def __post_init__(self) -> None:
        self.parameters = self.parameters or {"type": "object", "properties": {"q": {"type": "string"}}}
        self.calls: list[dict[str, Any]] = []
        self.started = threading.Event()

    def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
        self.calls.append(arguments)
        self.started.set()
        if self.block is not None:
            self.block.wait(10)
        return self.result


class StreamOnlyModel(ChatModel):
    """A test model that only streams: its JSON completions (the memory judge's) are empty."""

    def complete_json(
        self,
        *,
        messages: Messages,
        model: str,
        temperature: float,
        timeout: float,
        max_tokens: int | None = None,
        schema: dict[str, Any] | None = None,
    ) -> str:
        return "{}"


class ExplodingModel(StreamOnlyModel):
    label = "exploding"

    async def stream(
        self, *, messages: Messages, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        yield TextDelta("Start ")
        raise ValueError("secret detail")


class StallingModel(StreamOnlyModel):
    """Sends one chunk, then waits far longer than any test runs: cancelled in the middle of a stream."""

    label = "stalling"

    async def stream(
        self, *, messages: Messages, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        yield TextDelta("Partial ")
        await asyncio.sleep(60)
        yield TextDelta("never sent")


class ClockedModel(StreamOnlyModel):
    """Twenty pieces that arrive on the clock, one every 20 ms, like a provider's over the network
    (they wait for the reader, not the reader for them); `waits` counts the reads that found none there.
    (20 ms leaves a reader on a busy machine time to keep up, as it must for the count to mean anything.)"""

    label = "clocked"
    waits: list[int] = []

    async def stream(
        self, *, messages: Messages, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        loop = asyncio.get_running_loop()
        start, waits = loop.time(), 0
        for i in range(20):
            due = start + i * 0.02
            if due > loop.time():
                waits += 1
                await asyncio.sleep(due - loop.time())
            yield TextDelta(f"w{i} ")
        type(self).waits.append(waits)


class ClosableModel(StreamOnlyModel):
    """Streams a few words and records whether its stream was closed, as a provider connection would be."""

    label = "closable"
    closed: list[bool] = []

    async def stream(
        self, *, messages: Messages, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        try:
            for word in ("One ", "two ", "three"):
                yield TextDelta(word)
        finally:
            type(self).closed.append(True)


class WrittenModel(StreamOnlyModel):
    """A provider over HTTP as the turn sees it: the request is written after `write_after` seconds (reported
    as the OpenAI adapter's HTTP client reports it, chat.llm.written, unless `reports` is off), then the first
    piece comes `think` seconds later. `log` records when each happened, beside what listeners received."""

    label = "written"
    write_after = 0.02
    think = 0.3
    reports = True
    log: list[str] = []

    async def stream(
        self, *, messages: Messages, tools: Any = None, max_tokens: int | None = None, model: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        from chat.llm import written

        await asyncio.sleep(self.write_after)
        callback = written.on_request_written.get()
        type(self).log.append("written")
        if callback is not None and self.reports:
            callback()
        await asyncio.sleep(self.think)
        type(self).log.append("first piece")
        yield TextDelta("Hello")
