"""One chat turn (SPEC §3): build the model input, stream the reply, run tools, finish.

    turn = await Turn.begin(user=..., conversation=..., content=...)   # may raise TurnRejected
    async for event in turn.events(): ...                                # "start", "delta", "tool", "done" | "error"

Used by the JSON API (plain and server-sent events) and by the WebSocket consumer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from accounts.models import User
from chat import extensions, services
from chat.extensions import TurnContext
from chat.llm import ChatModel, LLMError, TextDelta, ToolCall, get_chat_model
from chat.models import Conversation, Message

logger = logging.getLogger(__name__)
PROMPTS = Path(__file__).parent / "prompts"


@cache
def system_prompt() -> str:
    return (PROMPTS / "system.md").read_text(encoding="utf-8").strip()


@dataclass
class TurnEvent:
    type: str  # "start" | "delta" | "tool" | "done" | "error"
    text: str = ""
    user_message: Message | None = None
    assistant_message: Message | None = None
    tool: str = ""


def build_model_input(ctx: TurnContext, context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """System prompt, one block per context provider, the stored context, the new message.

    Provider blocks are rebuilt every turn and never stored, so an edit takes effect next turn.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt()}]
    for provider in extensions.context_providers():
        try:
            block = provider(ctx)
        except Exception:  # a broken provider must not break chat
            logger.exception("context provider failed")
            continue
        if block:
            messages.append({"role": "system", "content": block})
    return [*messages, *context, {"role": "user", "content": ctx.user_message.content}]


def _run_tool(ctx: TurnContext, call: ToolCall) -> str:
    tool = extensions.get_tool(call.name)
    if tool is None:
        return f"Error: there is no tool named {call.name!r}."
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return "Error: the tool arguments were not valid JSON."
    if not isinstance(arguments, dict):
        return "Error: the tool arguments must be a JSON object."
    try:
        return tool.run(ctx, arguments)
    except Exception:
        logger.exception("tool %s failed", call.name)
        return f"Error: the tool {call.name} failed; nothing was done."


# Tools may block for long (a judge call); keep them off the shared ORM thread.
_run_tool_async = database_sync_to_async(_run_tool, thread_sensitive=False)


@dataclass
class Turn:
    started: services.StartedTurn
    model: ChatModel
    _text: list[str] = field(default_factory=list)
    _items: list[dict[str, Any]] = field(default_factory=list)
    _step_text: list[str] = field(default_factory=list)

    @classmethod
    async def begin(cls, *, user: User, conversation: Conversation, content: str) -> Turn:
        """Validate, lock and save the user message. Raises services.TurnRejected, writing nothing."""
        started = await database_sync_to_async(services.turn_start)(user=user, conversation=conversation, content=content)
        return cls(started=started, model=get_chat_model())

    @property
    def ctx(self) -> TurnContext:
        return TurnContext(user=self.started.user, conversation=self.started.conversation, user_message=self.started.user_message)

    async def events(self) -> AsyncIterator[TurnEvent]:
        s = self.started
        try:
            yield TurnEvent("start", user_message=s.user_message, assistant_message=s.assistant_message)
            messages = await database_sync_to_async(build_model_input)(self.ctx, s.context)
            async for event in self._steps(messages):
                yield event
        except LLMError as exc:
            message = await self._finish(Message.Status.ERROR, str(exc))
            yield TurnEvent("error", text=str(exc), user_message=s.user_message, assistant_message=message)
            return
        except (asyncio.CancelledError, GeneratorExit):
            # Stopped by the user or a dropped connection: keep what arrived, then stop.
            await asyncio.shield(self._finish(Message.Status.INTERRUPTED, "Stopped before the reply was complete."))
            raise
        except Exception:
            logger.exception("chat turn failed")
            message = await self._finish(Message.Status.ERROR, "Something went wrong while writing the reply.")
            yield TurnEvent("error", text=message.error, user_message=s.user_message, assistant_message=message)
            return
        message = await self._finish(Message.Status.COMPLETE, "")
        yield TurnEvent("done", user_message=s.user_message, assistant_message=message)

    async def _steps(self, messages: list[dict[str, Any]]) -> AsyncIterator[TurnEvent]:
        max_steps = settings.CHAT_MAX_TOOL_STEPS
        for step in range(max_steps + 1):
            # The last step offers no tools, so the loop always ends with an answer.
            tools = extensions.tool_schemas() if step < max_steps else []
            calls: list[ToolCall] = []
            self._step_text = []
            async for chunk in self.model.stream(messages=[*messages, *self._items], tools=tools or None):
                if isinstance(chunk, TextDelta):
                    if not chunk.text:
                        continue
                    if not self._step_text and self._text:
                        chunk = TextDelta("\n\n" + chunk.text)  # separate text written around a tool call
                    self._step_text.append(chunk.text)
                    self._text.append(chunk.text)
                    yield TurnEvent("delta", text=chunk.text)
                else:
                    calls = chunk.calls
            step_text = "".join(self._step_text).strip() or None
            self._step_text = []
            if not calls:
                self._items.append({"role": "assistant", "content": step_text or ""})
                return
            self._items.append({"role": "assistant", "content": step_text, "tool_calls": [c.as_message_part() for c in calls]})
            for call in calls:
                yield TurnEvent("tool", tool=call.name)
                result = await _run_tool_async(self.ctx, call)
                self._items.append({"role": "tool", "tool_call_id": call.id, "content": result})

    async def _finish(self, status: str, error: str) -> Message:
        items = list(self._items)
        partial = "".join(self._step_text).strip()
        if status != Message.Status.COMPLETE and partial:
            items.append({"role": "assistant", "content": partial})  # keep the state consistent
        return await database_sync_to_async(services.turn_finish)(
            turn=self.started, status=status, content="".join(self._text).strip(), error=error, new_items=items
        )

    async def run_to_end(self) -> TurnEvent:
        """Run the whole turn; returns the final "done" or "error" event."""
        last = TurnEvent("error")
        async for event in self.events():
            last = event
        return last
