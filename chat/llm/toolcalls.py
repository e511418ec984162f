"""Assembling streamed tool calls the way real servers send them, not only the way OpenAI does.

OpenAI sends a call's id and name once, then its arguments in fragments, keyed by `index`. Servers
people run themselves differ:
- llama.cpp (chatml-function-calling) repeats the complete name in every chunk: a name that is
  already there is not appended again ("flush_memory", not "flush_memoryflush_memory");
- some send the name cumulatively ("flush_", "flush_memory"), some in pieces ("flush_", "memory");
- ids may be missing (one is made up) or repeated in every chunk;
- `index` may be missing (the latest call continues), or every parallel call may come with index 0
  and its own id (a new id starts a new call);
- arguments may come whole in one chunk and again in the next, or as a JSON object instead of text;
- the deprecated `function_call` delta is read as one call.
What cannot be made sense of still becomes a call; the agent answers it with a clear tool error.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from chat.llm.base import ToolCall


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class ToolCallAssembler:
    """Feed it every stream chunk (`add_chunk` returns the chunk's text); read `calls()` at the end."""

    def __init__(self) -> None:
        self._slots: list[dict[str, str]] = []
        self._by_index: dict[Any, int] = {}

    @property
    def started(self) -> bool:
        return bool(self._slots)

    def add_chunk(self, chunk: Any) -> list[str]:
        """The text in one stream chunk; tool-call fragments are merged into the calls."""
        choices = _get(chunk, "choices")
        if not choices:  # e.g. the final usage chunk
            return []
        delta = _get(choices[0], "delta")
        if delta is None:
            return []
        for part in _get(delta, "tool_calls") or []:
            self._add_part(part)
        legacy = _get(delta, "function_call")
        if legacy is not None:
            self._add_part({"index": "function_call", "function": legacy})
        content = _get(delta, "content")
        return [content] if isinstance(content, str) and content else []

    def _slot_for(self, index: Any, call_id: str) -> dict[str, str]:
        # No index: the latest call continues (or the first one starts).
        latest = len(self._slots) - 1 if self._slots else None
        position = latest if index is None else self._by_index.get(index)
        if position is not None:
            slot = self._slots[position]
            if not (call_id and slot["id"] and call_id != slot["id"]):
                return slot
        # A new call: a new index, or a new id under an index already used (parallel calls all at 0).
        slot = {"id": "", "name": "", "arguments": ""}
        self._slots.append(slot)
        self._by_index[index] = len(self._slots) - 1
        return slot

    def _add_part(self, part: Any) -> None:
        call_id = str(_get(part, "id") or "")
        slot = self._slot_for(_get(part, "index"), call_id)
        if call_id:
            slot["id"] = call_id
        function = _get(part, "function")
        if function is not None:
            _add_name(slot, _get(function, "name"))
            _add_arguments(slot, _get(function, "arguments"))

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                id=slot["id"] or f"call_{uuid.uuid4().hex[:24]}",
                name=slot["name"].strip(),
                arguments=slot["arguments"].strip() or "{}",
            )
            for slot in self._slots
        ]


def _add_name(slot: dict[str, str], name: Any) -> None:
    if not isinstance(name, str) or not name:
        return
    if name.startswith(slot["name"]):
        slot["name"] = name  # the first piece, a repeat, or a cumulative name
    else:
        slot["name"] += name  # the next piece of a name sent in fragments


def _add_arguments(slot: dict[str, str], arguments: Any) -> None:
    if arguments is None or arguments == "":
        return
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    if slot["arguments"] and arguments == slot["arguments"] and _complete_json(arguments):
        return  # the same complete arguments sent again
    if _complete_json(slot["arguments"]) and _complete_json(arguments):
        slot["arguments"] = arguments  # a complete value replaces a complete value
        return
    slot["arguments"] += arguments
