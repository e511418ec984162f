"""Judge batches bounded by size, not only by count: a judge request never exceeds the judge's window.

The window is MEMORY_CONTEXT_TOKENS, or the chat model's CHAT_CONTEXT_TOKENS when that is not set; the
answer's share (MEMORY_JUDGE_MAX_TOKENS) is kept free, since servers such as llama.cpp refuse a request
whose prompt plus `max_tokens` exceeds their context. Sizes are `chat.tokens` estimates, which err on the
large side.

`fit` takes the oldest pending messages that fit, at least one. When even one does not fit beside all
the active memories, the oldest memories are left out of the judge's view (validation still refuses a
duplicate of any active memory), and a single message longer than the whole window is shown cut short,
with a note. What is left over simply waits for the next batch: nothing is skipped for being too large.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date

from django.conf import settings

from chat.tokens import estimate_request
from memory import judge

CUT_NOTE = " […the rest of this message was too long to show]"


def window() -> int:
    return int(settings.MEMORY_CONTEXT_TOKENS) or int(settings.CHAT_CONTEXT_TOKENS)


def request_budget() -> int:
    """The most tokens a judge request's prompt may take."""
    return window() - int(settings.MEMORY_JUDGE_MAX_TOKENS)


def budget_problem(tokens: int) -> str:
    """Why a request of `tokens` cannot be sent, in the run record's words."""
    return (
        f"the judge request needs about {tokens} tokens plus {settings.MEMORY_JUDGE_MAX_TOKENS} for the answer, "
        f"more than the window of {window()}."
    )


@dataclass(frozen=True)
class Fitted:
    pending: list[judge.PendingMessage]  # the batch: the oldest messages that fit
    memories: list[judge.ActiveMemory]  # the memories shown (all, unless they alone overflow)
    judge_input: judge.JudgeInput
    tokens: int  # the request's estimated size
    note: str = ""  # what was left out of the judge's view, for the run record


def _size(
    memories: list[judge.ActiveMemory], pending: list[judge.PendingMessage], today: date | None = None
) -> tuple[int, judge.JudgeInput]:
    rendered = judge.render_input(memories=memories, pending=pending, today=today)
    return estimate_request(rendered.messages), rendered


def fit(
    *,
    memories: list[judge.ActiveMemory],
    pending: list[judge.PendingMessage],
    budget: int | None = None,
    today: date | None = None,
) -> Fitted:
    """The largest prefix of `pending` whose judge request fits `budget` (see the module docstring)."""
    budget = request_budget() if budget is None else budget
    size, rendered = _size(memories, pending, today)
    if size <= budget:
        return Fitted(pending, memories, rendered, size)
    # Binary search for the longest prefix that fits (sizes grow with every message).
    low, high = 0, len(pending)  # pending[:low] fits (or low == 0), pending[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if _size(memories, pending[:middle], today)[0] <= budget:
            low = middle
        else:
            high = middle
    if low:
        size, rendered = _size(memories, pending[:low], today)
        return Fitted(pending[:low], memories, rendered, size)
    return _fit_one(memories=memories, message=pending[0], budget=budget, today=today)


def _fit_one(
    *, memories: list[judge.ActiveMemory], message: judge.PendingMessage, budget: int, today: date | None
) -> Fitted:
    """One message that does not fit beside every memory: show fewer memories, then less of the message."""
    notes: list[str] = []
    shown = list(memories)
    while shown and _size(shown, [message], today)[0] > budget:
        shown = shown[len(shown) // 2 + 1 :] if len(shown) > 1 else []  # keep the newest half
    if len(shown) < len(memories):
        notes.append(f"{len(memories) - len(shown)} of {len(memories)} active memories were not shown (too large).")
    size, rendered = _size(shown, [message], today)
    if size > budget:
        content = message.content
        while content and size > budget:
            content = content[: len(content) // 2]
            cut = replace(message, content=content + CUT_NOTE)
            size, rendered = _size(shown, [cut], today)
        notes.append(f"Message {message.id} was shown cut to {len(content)} characters (too large).")
    return Fitted([message], shown, rendered, size, ("Note: " + " ".join(notes)) if notes else "")
