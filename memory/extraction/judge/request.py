"""What the memory judge is shown: the request's two messages, rendered here (its answer:
memory.extraction.judge.answer).

Everything here is pure (no database): the pipeline loads the rows, calls these, and commits.

The judge sees the user's active memories with their real ids and the pending user messages,
numbered, with `--- another conversation ---` wherever the conversation changes. It never sees
assistant replies or tool output: what the assistant said is not what the user is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
PROMPT_PATH = PROMPTS / "judge.md"
# The same rules in about a third of the tokens, for small windows (memory.extraction.batching chooses).
COMPACT_PROMPT_PATH = PROMPTS / "judge_compact.md"
CONVERSATION_BREAK = "--- another conversation ---"


@cache
def judge_prompt(compact: bool = False) -> str:
    return (COMPACT_PROMPT_PATH if compact else PROMPT_PATH).read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class PendingMessage:
    id: int
    conversation_id: Any
    content: str
    created_at: datetime | None = None
    # The project its conversation is in now (None: none), and that project's memory mode and name. A batch
    # holds the messages of one scope (memory.extraction.reads.pending_batch).
    project_id: int | None = None
    project_mode: str = ""
    project_name: str = ""

    @property
    def day(self) -> date | None:
        """The day it was sent, in UTC (what the judge is shown)."""
        return self.created_at.astimezone(UTC).date() if self.created_at is not None else None


@dataclass(frozen=True)
class ActiveMemory:
    id: int
    content: str
    key: str = ""
    expires_at: datetime | None = None
    # Its scope: None about the user, else the project's id (shown only in a project's batch).
    project_id: int | None = None
    in_project: bool = False  # whether the batch is a project's: then each memory says its scope

    def line(self) -> str:
        notes = [f"scope: {'project' if self.project_id else 'user'}"] if self.in_project else []
        notes += [f"key: {self.key}"] if self.key else []
        if self.expires_at is not None:
            notes.append(f"until: {self.expires_at.astimezone(UTC).date().isoformat()}")
        text = " ".join(self.content.split())
        return f"[{self.id}] {text}" + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class JudgeInput:
    messages: list[dict[str, str]]
    # Message number shown to the judge -> message id.
    numbers: dict[int, int]
    # The memories shown, by id: an update or a retract may name only these (memory.extraction.judge.validation).
    memory_ids: frozenset[int] = frozenset()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _indent_continuation(text: str) -> str:
    # Continuation lines are indented so no user text can pose as a break line or a new number.
    lines = text.strip().splitlines() or [""]
    return "\n".join([lines[0], *("   " + line for line in lines[1:])])


# What the judge is told of a project's batch (SPEC §9): where the messages come from, and where what it learns goes.
PROJECT_NOTE = {
    "shared": 'These messages come from the user\'s project "{name}"; each memory says its scope. Give each add '
    'and update a "scope": "project" for a fact about this piece of work (a deadline, its tools, a preference '
    'only for it, which may hold a key the user also holds), "user" for a lasting fact about the person. A fact '
    "about the work is worth keeping in its project even if no other conversation needs it.",
    "isolated": 'These messages come from the user\'s project "{name}", which keeps its memories to itself: '
    'everything learned here is stored in the project ("scope": "project"); a fact about the work is worth '
    "keeping even if no other conversation needs it.",
}


def render_input(
    *,
    memories: list[ActiveMemory],
    pending: list[PendingMessage],
    today: date | None = None,
    compact: bool = False,
) -> JudgeInput:
    """The judge's two messages: the prompt (the compact one for small windows), then today's date (UTC),
    the project the messages come from (a project's batch), the memories and the numbered user messages, each
    sent before today with the day it was sent."""
    project = next(((m.project_name, m.project_mode) for m in pending if m.project_mode in PROJECT_NOTE), None)
    memory_lines = [m.line() for m in memories] or ["(none)"]
    message_lines, numbers = _numbered(pending, today)
    text = "\n".join(
        [
            *([f"Today (UTC): {today.isoformat()}", ""] if today is not None else []),
            *([PROJECT_NOTE[project[1]].format(name=_one_line(project[0])), ""] if project is not None else []),
            "Active memories ([id] content):",
            *memory_lines,
            "",
            "New messages from the user (numbered, oldest first):",
            *(message_lines or ["(none)"]),
        ]
    )
    return JudgeInput(
        messages=[{"role": "system", "content": judge_prompt(compact)}, {"role": "user", "content": text}],
        numbers=numbers,
        memory_ids=frozenset(m.id for m in memories),
    )


def _numbered(pending: list[PendingMessage], today: date | None) -> tuple[list[str], dict[int, int]]:
    """The messages' numbered lines, a break line wherever the conversation changes; and number -> id."""
    lines: list[str] = []
    numbers: dict[int, int] = {}
    previous: Any = None
    for message in pending:
        if not message.content.strip():
            continue  # nothing to judge; the message is still marked processed with its batch
        if previous is not None and message.conversation_id != previous:
            lines.append(CONVERSATION_BREAK)
        previous = message.conversation_id
        number = len(numbers) + 1
        numbers[number] = message.id
        # Only an earlier day is shown: most messages are today's, and the judge is told which day that is.
        day = f"[{message.day.isoformat()}] " if message.day is not None and message.day != today else ""
        lines.append(f"{number}. {day}{_indent_continuation(message.content)}")
    return lines, numbers


# --- reading it back: the demo judge answers from it, and a run's scrub finds what it showed -------

_MEMORY_LINE = re.compile(r"^\[(\d+)\] (.*?)(?: \((?:scope|key|until): [^()]*\))?$")
_PROJECT_SCOPE = re.compile(r"\(scope: project\b")
_MESSAGE_LINE = re.compile(r"^(\d+)\. (?:\[(\d{4}-\d{2}-\d{2})\] )?(.*)$")
_TODAY_LINE = re.compile(r"^Today \(UTC\): (\d{4}-\d{2}-\d{2})$", re.M)


def message_days(text: str) -> dict[int, date]:
    """The day each numbered message was sent, from the judge's user message: a message shown without a
    day was sent today."""
    today = _TODAY_LINE.search(text)
    days = {}
    for line in text.splitlines():
        if m := _MESSAGE_LINE.match(line):
            if m[2]:
                days[int(m[1])] = date.fromisoformat(m[2])
            elif today:
                days[int(m[1])] = date.fromisoformat(today[1])
    return days


def parse_judge_input(text: str) -> tuple[dict[int, str], list[tuple[int, str]]]:
    """Active memories (id -> content) and numbered messages from the judge's user message."""
    memories: dict[int, str] = {}
    messages: list[tuple[int, str]] = []
    section = ""
    for line in text.splitlines():
        if line.startswith(("Active memories", "New messages")):
            section = "memories" if line.startswith("Active") else "messages"
        elif section == "memories" and (m := _MEMORY_LINE.match(line)):
            memories[int(m[1])] = m[2]
        elif section == "messages" and line != CONVERSATION_BREAK:
            _message_line(messages, line)
    return memories, messages


def _message_line(messages: list[tuple[int, str]], line: str) -> None:
    """A numbered message's line, or a continuation of the one before (indented by `_indent_continuation`)."""
    if m := _MESSAGE_LINE.match(line):
        messages.append((int(m[1]), m[3]))
    elif line.startswith("   ") and messages:
        number, previous = messages[-1]
        messages[-1] = (number, previous + " " + line.strip())


def project_memories(text: str) -> set[int]:
    """The ids of the memories shown as the project's (a project's batch says each memory's scope)."""
    return {int(m[1]) for line in text.splitlines() if (m := _MEMORY_LINE.match(line)) and _PROJECT_SCOPE.search(line)}
