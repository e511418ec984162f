"""Chat's prompts are files beside this module (system.md, summary.md), reviewed like code."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS = Path(__file__).resolve().parent


@cache
def system_prompt() -> str:
    """The system prompt every turn starts with (chat.turn.model_input)."""
    return (PROMPTS / "system.md").read_text(encoding="utf-8").strip()
