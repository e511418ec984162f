"""What a turn tells its listeners (the SSE response, the pages through the fan-out): one `TurnEvent` at a
time, from "start" to "done" or "error". A leaf, so that whatever renders events (chat.fragments) can
import it without importing the turn."""

from __future__ import annotations

from dataclasses import dataclass

from chat.models import Message


@dataclass
class TurnEvent:
    type: str  # "start" | "waiting" (text: how many requests are ahead) | "delta" | "tool" | "done" | "error"
    text: str = ""
    user_message: Message | None = None
    assistant_message: Message | None = None
    tool: str = ""
    kind: str = ""  # on "error": the LLMError's kind ("too_long": the message alone does not fit the window)
