"""Judge batches bounded by size, not only by count: a judge request never exceeds the judge's window.

The window is MEMORY_CONTEXT_TOKENS, or the chat model's CHAT_CONTEXT_TOKENS when that is not set. Room
for the answer is kept free, since servers such as llama.cpp refuse a request whose prompt plus
`max_tokens` exceeds their context; that room scales with the batch (a short JSON answer does not need
2,000 tokens): ANSWER_BASE_TOKENS plus ANSWER_PER_MESSAGE_TOKENS per message, at most
MEMORY_JUDGE_MAX_TOKENS. The request then asks for whatever the window leaves, up to that maximum.
Below COMPACT_BELOW_TOKENS of window the compact judge prompt is used (MEMORY_JUDGE_PROMPT: auto, full,
compact). Sizes are `chat.llm.tokens` estimates, which err on the large side, calibrated by the judge model's
own counts where the server reported them (chat.llm.server_facts). The window is the one the server
states when CHAT_CONTEXT_TOKENS is not set.

`fit` takes the oldest pending messages that fit, at least one, beside the memories chosen for the judge
(memory.extraction.shown: at most its WINDOW_SHARE of the window). When even one does not fit beside them, the oldest
of them are left out of the judge's view too (validation still refuses a duplicate of any active memory),
and a single message longer than the whole window is shown cut short, with a note.
What is left over simply waits for the next batch: nothing is skipped for being too large.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date

from django.conf import settings

from chat.llm import server_facts, window_size
from chat.llm.tokens import estimate_request, scaled
from memory.extraction import judge

CUT_NOTE = " […the rest of this message was too long to show]"
#: answer room every judge request keeps, and what each message shown adds to it
ANSWER_BASE_TOKENS = 128
ANSWER_PER_MESSAGE_TOKENS = 96
#: windows smaller than this get the compact judge prompt (with MEMORY_JUDGE_PROMPT=auto)
COMPACT_BELOW_TOKENS = 8192


def window() -> int:
    return int(settings.MEMORY_CONTEXT_TOKENS) or window_size.context_tokens()


def compact_prompt() -> bool:
    """Whether the judge is shown the compact prompt (memory/prompts/judge_compact.md)."""
    choice = str(settings.MEMORY_JUDGE_PROMPT).strip().lower()
    if choice in ("full", "compact"):
        return choice == "compact"
    return window() < COMPACT_BELOW_TOKENS


def answer_room(messages: int) -> int:
    """The answer tokens a batch of `messages` keeps free in the window."""
    return min(int(settings.MEMORY_JUDGE_MAX_TOKENS), ANSWER_BASE_TOKENS + ANSWER_PER_MESSAGE_TOKENS * messages)


def request_budget(messages: int | None = None) -> int:
    """The most tokens the prompt of a judge request showing `messages` messages may take (None: any
    number, keeping the whole MEMORY_JUDGE_MAX_TOKENS free)."""
    room = int(settings.MEMORY_JUDGE_MAX_TOKENS) if messages is None else answer_room(messages)
    return window() - room


def max_tokens_for(tokens: int) -> int:
    """`max_tokens` of a request whose prompt takes `tokens`: what the window leaves, up to the maximum."""
    return max(1, min(int(settings.MEMORY_JUDGE_MAX_TOKENS), window() - tokens))


def budget_problem(tokens: int, messages: int) -> str:
    """Why a request of `tokens` cannot be sent, in the run record's words."""
    return (
        f"the judge request needs about {tokens} tokens plus {answer_room(messages)} for the answer, "
        f"more than the window of {window()}."
    )


@dataclass(frozen=True)
class Fitted:
    pending: list[judge.PendingMessage]  # the batch: the oldest messages that fit
    memories: list[judge.ActiveMemory]  # the memories shown (those chosen, unless they alone overflow)
    judge_input: judge.JudgeInput
    tokens: int  # the request's estimated size
    note: str = ""  # what was left out of the judge's view, for the run record


def _size(
    memories: list[judge.ActiveMemory], pending: list[judge.PendingMessage], today: date | None = None
) -> tuple[int, judge.JudgeInput]:
    rendered = judge.render_input(memories=memories, pending=pending, today=today, compact=compact_prompt())
    # Calibrated by the judge model's own counts where the server reported them (chat.llm.server_facts).
    return scaled(estimate_request(rendered.messages), server_facts.model_ratio(settings.MEMORY_MODEL)), rendered


def fit(
    *, memories: list[judge.ActiveMemory], pending: list[judge.PendingMessage], today: date | None = None
) -> Fitted:
    """The largest prefix of `pending` whose judge request and answer room fit the window (see the module
    docstring)."""
    size, rendered = _size(memories, pending, today)
    if size <= request_budget(len(pending)):
        return Fitted(pending, memories, rendered, size)
    # Binary search for the longest prefix that fits (sizes grow with every message).
    low, high = 0, len(pending)  # pending[:low] fits (or low == 0), pending[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if _size(memories, pending[:middle], today)[0] <= request_budget(middle):
            low = middle
        else:
            high = middle
    if low:
        size, rendered = _size(memories, pending[:low], today)
        return Fitted(pending[:low], memories, rendered, size)
    return _fit_one(memories=memories, message=pending[0], budget=request_budget(1), today=today)


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
