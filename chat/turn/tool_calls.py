"""A turn's tool calls: each run through the tool registry (chat.extensions), and, when a turn ends, an
answer for any call left without one."""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async

from chat import extensions
from chat.extensions import TurnContext
from chat.llm import ToolCall

logger = logging.getLogger(__name__)


def run_tool(ctx: TurnContext, call: ToolCall) -> str:
    tool = extensions.get_tool(call.name, ctx)
    if tool is None:  # unknown, or not offered in this turn
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


def answered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` where every tool call has a result: providers reject a context with an unanswered call,
    which a turn stopped in the middle of its tools would otherwise leave behind."""
    answered = {item.get("tool_call_id") for item in items if item.get("role") == "tool"}
    result = list(items)
    for item in items:
        for call in item.get("tool_calls") or []:
            if call["id"] not in answered:
                result.append({"role": "tool", "tool_call_id": call["id"], "content": "Error: the tool was not run."})
    return result


# In the loop's thread pool, as the rest of the turn's database work (chat.turn.agent): a tool may block for long.
run_tool_async = database_sync_to_async(run_tool, thread_sensitive=False)
