"""Writing a compaction's summary (chat.turn.compaction): the oldest part of the agent state, condensed by
`SUMMARY_MODEL` (prompt: chat/prompts/summary.md); an earlier summary is folded into the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from chat import model_queue
from chat.llm import get_chat_model, tokens
from chat.turn.context_budget import Budget
from chat.turn.cut import (
    KEEP_SHARE,
    KEEP_SHARE_HARD,
    SUMMARY_SHARE,
    SUMMARY_SHARE_HARD,
    _parts,
    clip_text,
    split_at,
    summary_item,
    summary_of,
)

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
SUMMARY_MAX_TOKENS = 1500


@cache
def summary_prompt() -> str:
    return (PROMPTS / "summary.md").read_text(encoding="utf-8").strip()


_SAID_BY = {"user": "User: ", "tool": "Tool result: ", "system": "Note: "}


def _line(item: dict[str, Any]) -> str:
    role, content = item.get("role"), str(item.get("content") or "").strip()
    if role in _SAID_BY:
        return _SAID_BY[role] + content
    calls = item.get("tool_calls") or []
    said = [f"Assistant: {content}"] if content else []
    for call in calls:
        function = call.get("function") or {}
        said.append(f"Assistant called the tool {function.get('name')} with {function.get('arguments') or '{}'}")
    return "\n".join(said) or "Assistant: (no text)"


def _pieces(lines: list[str], room: int) -> list[str]:
    """The transcript lines grouped into pieces of at most `room` tokens each (long lines clipped)."""
    pieces: list[list[str]] = [[]]
    used = 0
    for line in lines:
        line = clip_text(line, room)
        size = tokens.estimate_text(line) + 1
        if pieces[-1] and used + size > room:
            pieces.append([])
            used = 0
        pieces[-1].append(line)
        used += size
    return ["\n\n".join(p) for p in pieces if p]


def summarize(*, previous: str | None, items: list[dict[str, Any]], budget: Budget, max_tokens: int) -> str:
    """One summary of an earlier summary and `items`, by SUMMARY_MODEL (streamed: given up, it stops the
    server). Every request fits the window: a long transcript is summarized in pieces, each folded into the
    next. Raises LLMError."""
    model = get_chat_model()
    prompt = summary_prompt().replace("{max_words}", str(max(40, int(max_tokens * 0.6))))
    overhead = tokens.estimate_request([{"role": "system", "content": prompt}, {"role": "user", "content": ""}])
    summary = previous
    # In raw estimate, like the pieces: a calibrated (or, after a refusal, raised) ratio shrinks the room.
    room = int(budget.input / (budget.ratio or 1.0)) - overhead - max_tokens - 64
    lines = [_line(item) for item in items]
    pieces = _pieces(lines, max(room - max_tokens, 64))  # room for the folded summary as well
    for piece in pieces:
        earlier = f"The summary so far:\n{summary}\n\n" if summary else ""
        request = [
            {"role": "system", "content": prompt},
            {"role": "user", "content": f"{earlier}The messages to summarize:\n\n{piece}"},
        ]
        # Each piece waits its turn in the provider's queue (chat.model_queue): behind chat when in the background.
        lease = float(settings.LLM_TIMEOUT) + model_queue.LEASE_MARGIN_SECONDS
        waited = float(settings.CHAT_TURN_TIMEOUT)
        with model_queue.slot(
            model, lease=lease, wait=waited, max_tokens=max_tokens, model_name=settings.SUMMARY_MODEL
        ):
            summary = model.complete_text(
                messages=request, model=settings.SUMMARY_MODEL, max_tokens=max_tokens, timeout=settings.LLM_TIMEOUT
            ).strip()
        summary = clip_text(summary, max_tokens)
    return summary or ""


@dataclass
class Compacted:
    context: list[dict[str, Any]]
    summarized_turns: int  # user messages newly covered by the summary (0 when items were only dropped)
    summarized: bool


def compact(
    context: list[dict[str, Any]], *, budget: Budget, hard: bool = False, fixed: int = 0, summarize_with: Any = None
) -> Compacted | None:
    """The state with its oldest part summarized, or None when there is nothing to compact.

    `fixed` is the rest of the request (system prompt, memory block, tools, the new message): the kept tail
    and the summary together leave room for it. Raises LLMError when the summarizer fails."""
    head, items = _parts(context)
    share, summary_share = (KEEP_SHARE_HARD, SUMMARY_SHARE_HARD) if hard else (KEEP_SHARE, SUMMARY_SHARE)
    max_summary = max(48, min(SUMMARY_MAX_TOKENS, int(budget.input * summary_share)))
    keep = max(0, min(int(budget.input * share), budget.input - fixed - max_summary - 16))
    cut = split_at(items, keep)
    if cut == 0:
        return None
    old, recent = items[:cut], items[cut:]
    text = (summarize_with or summarize)(previous=summary_of(head), items=old, budget=budget, max_tokens=max_summary)
    turns = sum(1 for item in old if item.get("role") == "user")
    return Compacted([summary_item(text), *recent], summarized_turns=turns, summarized=True)
