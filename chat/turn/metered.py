"""What a chat turn consumed, counted while it streams and reported once it is saved (chat.llm.metering).

Each model step is one provider call: its prompt and completion as the provider reported them (the usage
chunk at the end of the stream), or the calibrated estimate marked as such. The memory block's share of
each prompt (the "memory" context provider's text, measured when the input is built) is counted apart, as
kind `memory_block`, so `chat` + `memory_block` add up to what the provider reported. Counting is a few
additions per chunk; the records are written after the reply is saved, never before a first token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chat.llm import TextDelta, ToolCalls, Usage, metering, tokens
from chat.turn.model_input import build_model_input

MEMORY_PROVIDER = "memory"  # the context provider whose block is the memory block (memory.apps)


@dataclass
class StepMeter:
    meter: TurnMeter
    request: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    ratio: float | None
    usage: Usage | None = None
    written: list[str] = field(default_factory=list)
    answered: bool = False

    def saw(self, chunk: object) -> None:
        if isinstance(chunk, Usage):
            self.usage = chunk
        elif isinstance(chunk, TextDelta):
            self.answered = True
            self.written.append(chunk.text)
        elif isinstance(chunk, ToolCalls):
            self.answered = True
            self.written.extend(call.name + call.arguments for call in chunk.calls)

    def end(self) -> None:
        """The step is over (however it ended): a provider that answered or reported charged for it."""
        if not self.answered and self.usage is None:
            return  # refused or never reached: nothing to count
        block = tokens.scaled(self.meter.block_tokens.get(MEMORY_PROVIDER, 0), self.ratio)
        reported = self.usage
        if reported is not None:
            prompt, estimated = reported.prompt_tokens, False
        else:
            prompt, estimated = tokens.scaled(tokens.estimate_request(self.request, self.tools), self.ratio), True
        if reported is not None and reported.completion_tokens is not None:
            completion = reported.completion_tokens
        else:
            completion, estimated = tokens.scaled(tokens.estimate_text("".join(self.written)), self.ratio), True
        block = min(block, prompt)
        self.meter.memory_tokens += block
        self.meter.chat.append(metering.Call(self.meter.model, prompt - block, completion, estimated))


@dataclass
class TurnMeter:
    model: str  # the provider's model name the turn streams from
    # Filled by chat.turn.model_input.build_model_input (shared with the turn's TurnContext): each context
    # provider's block, in raw estimated tokens, as last built.
    block_tokens: dict[str, int] = field(default_factory=dict)
    chat: list[metering.Call] = field(default_factory=list)
    memory_tokens: int = 0
    # Calls made while building the input (the memory block's query embedding): reported with the turn,
    # not on the way to its first token.
    building: list[metering.Call] = field(default_factory=list)

    def build(self, ctx: Any, context: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The turn's model input (chat.turn.model_input), its blocks measured and its calls counted."""
        with metering.counting(self.building):
            return build_model_input(ctx, context)

    def step(self, request: list[dict[str, Any]], tools: list[dict[str, Any]] | None, ratio: float | None) -> StepMeter:
        return StepMeter(self, request, tools, ratio)

    def report(self, *, user_id: int, project_id: int | None, assistant_message_id: int | None) -> None:
        """Record the turn (run after it is saved). The memory block counts as estimated: it is our measure
        of a part of the prompt the provider counted as a whole."""
        metering.report(user_id=user_id, project_id=project_id, kind="chat", calls=self.chat)
        metering.report(user_id=user_id, project_id=project_id, kind="embedding", calls=self.building)
        if self.memory_tokens:
            block = metering.Call(self.model, self.memory_tokens, 0, True)
            metering.report(user_id=user_id, project_id=project_id, kind="memory_block", calls=[block])
        if assistant_message_id is not None:
            metering.reply_report(assistant_message_id=assistant_message_id, memory_tokens=self.memory_tokens)
