"""A change extraction made to a user's memories, as data.

The pipeline returns these (memory.extraction.outcomes.Result.changes) and the memories_changed signal carries
them; each reader renders them its own way: the "Memory updated" notice and the conversation marker
(memory.notices), the flush tool's result for the model and the extract_memories command (`sentence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["add", "update", "retract", "clear"]
# The kind of the chat conversation markers memory writes (chat.markers): where a memory changed.
MARKER_KIND = "memory"


@dataclass(frozen=True)
class MemoryChange:
    kind: Kind
    # add, update: the memory written; retract: the memory forgotten. None for clear, and for an add or
    # update rebuilt from a run's record (memory.notices.run_changes), which does not keep new ids.
    memory_id: int | None = None
    # add, update: the new sentence; retract: the forgotten one.
    content: str = ""
    # update: the memory it replaced, and that memory's sentence when known.
    previous_id: int | None = None
    previous_content: str = ""
    # add, update: written as a suggestion, waiting for the user's Keep or Discard.
    suggested: bool = False

    def sentence(self) -> str:
        """The change in words, as the flush tool reports it to the model: "Remembered: …" and so on."""
        if self.kind == "clear":
            return "Forgot everything"
        if self.suggested:
            return f"Suggested, waiting for the user to keep it (not remembered yet): {self.content}"
        verb = {"add": "Remembered", "update": "Updated", "retract": "Forgot"}[self.kind]
        return f"{verb}: {self.content}"
