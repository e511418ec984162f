"""The memory judge: what it is shown, how its answer is parsed, and how each operation is checked.

Everything here is pure (no database): the pipeline loads the rows, calls these, and commits.

The judge sees the user's active memories with their real ids and the pending user messages,
numbered, with `--- another conversation ---` wherever the conversation changes. It never sees
assistant replies or tool output: what the assistant said is not what the user is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from chat.services import is_valid_text
from memory.models import CONTENT_MAX

PROMPT_PATH = Path(__file__).parent / "prompts" / "judge.md"
CONVERSATION_BREAK = "--- another conversation ---"
OPS = ("add", "update", "retract", "clear")


@cache
def judge_prompt() -> str:
    return PROMPT_PATH.read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class PendingMessage:
    id: int
    conversation_id: Any
    content: str


@dataclass(frozen=True)
class ActiveMemory:
    id: int
    content: str


@dataclass(frozen=True)
class JudgeInput:
    messages: list[dict[str, str]]
    # Message number shown to the judge -> message id.
    numbers: dict[int, int]


def _indent_continuation(text: str) -> str:
    # Continuation lines are indented so no user text can pose as a break line or a new number.
    lines = text.strip().splitlines() or [""]
    return "\n".join([lines[0], *("   " + line for line in lines[1:])])


def render_input(*, memories: list[ActiveMemory], pending: list[PendingMessage]) -> JudgeInput:
    """The judge's two messages: the prompt, then the memories and the numbered user messages."""
    memory_lines = [f"[{m.id}] {' '.join(m.content.split())}" for m in memories] or ["(none)"]
    message_lines: list[str] = []
    numbers: dict[int, int] = {}
    previous: Any = None
    for message in pending:
        if not message.content.strip():
            continue  # nothing to judge; the message is still marked processed with its batch
        if previous is not None and message.conversation_id != previous:
            message_lines.append(CONVERSATION_BREAK)
        previous = message.conversation_id
        number = len(numbers) + 1
        numbers[number] = message.id
        message_lines.append(f"{number}. {_indent_continuation(message.content)}")
    text = "\n".join(
        [
            "Active memories ([id] content):",
            *memory_lines,
            "",
            "New messages from the user (numbered, oldest first):",
            *(message_lines or ["(none)"]),
        ]
    )
    return JudgeInput(
        messages=[{"role": "system", "content": judge_prompt()}, {"role": "user", "content": text}], numbers=numbers
    )


class MalformedOutput(ValueError):
    """The judge's answer does not follow the contract; the whole batch fails."""


@dataclass(frozen=True)
class Operation:
    op: str
    id: int | None = None
    content: str | None = None
    sources: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": self.op}
        if self.id is not None:
            data["id"] = self.id
        if self.content is not None:
            data["content"] = self.content
        if self.sources:
            data["sources"] = list(self.sources)
        return data


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _operation(index: int, item: object) -> Operation:
    where = f"operation {index + 1}"
    if not isinstance(item, dict):
        raise MalformedOutput(f"{where} is not an object")
    op = item.get("op")
    if op not in OPS:
        raise MalformedOutput(f"{where} has an unknown op {op!r}")
    memory_id = item.get("id")
    content = item.get("content")
    sources = item.get("sources")
    if op in ("update", "retract") and not _int(memory_id):
        raise MalformedOutput(f"{where} ({op}) needs an integer id")
    if op in ("add", "update") and not isinstance(content, str):
        raise MalformedOutput(f"{where} ({op}) needs a string content")
    if sources is not None and (not isinstance(sources, list) or not all(_int(s) for s in sources)):
        raise MalformedOutput(f"{where} has sources that are not a list of message numbers")
    return Operation(
        op=op,
        id=memory_id if op in ("update", "retract") else None,
        content=content if op in ("add", "update") else None,
        sources=tuple(sources or ()) if op in ("add", "update") else (),
    )


def parse_output(raw: str) -> list[Operation]:
    """Strictly parse `{"operations": [...]}`. Raises MalformedOutput."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise MalformedOutput("the answer is not valid JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("operations"), list):
        raise MalformedOutput('the answer is not an object with an "operations" list')
    operations = [_operation(i, item) for i, item in enumerate(data["operations"])]
    kinds = {o.op for o in operations}
    if "clear" in kinds and kinds & {"update", "retract"}:
        raise MalformedOutput("clear cannot be combined with update or retract")
    return operations


@dataclass(frozen=True)
class KnownMemory:
    """What validation needs to know about a memory id the judge named."""

    owner_id: int
    active: bool
    content: str


@dataclass
class Plan:
    """The operations that will be applied, in order, and the ones dropped with their reasons."""

    clear: bool = False
    adds: list[tuple[str, list[int]]] = field(default_factory=list)  # content, message ids
    updates: list[tuple[int, str, list[int]]] = field(default_factory=list)  # old id, content, message ids
    retracts: list[int] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)


def is_storable(text: str) -> bool:
    """False for text a database refuses: a NUL (PostgreSQL) or a lone UTF-16 surrogate (any)."""
    return "\x00" not in text and is_valid_text(text)


def storable(text: str) -> str:
    """`text` with NUL removed and lone surrogates replaced, for recording what the judge said."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


# Memories are facts about the user, never instructions to the assistant. An answer that would store
# a permission ("submit my orders without asking") or a rule override ("ignore your previous
# instructions") is dropped: stored, it would act on every later turn. Preferences about how to be
# served (a reply language, units, length) are facts and stay.
_INSTRUCTION_PATTERNS = [
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,30}\b(instructions?|rules?|guidelines?|system prompt|"
    r"restrictions?|safety|polic(y|ies)|guardrails?)\b",
    r"\bwithout\b.{0,20}\b(asking|confirm(ing|ation)?|approv(al|ing)|permission|checking|consent)\b",
    r"\b(do not|don't|never|no need to|stop)\b.{0,15}\b(ask|check|confirm|verify)\b.{0,25}\b(before|first|me|"
    r"permission|confirmation|approval)\b",
    r"\b(you|assistant|memora|ai|model|bot)\b.{0,30}\b(allowed|authori[sz]ed|permitted|permission|free|"
    r"entitled)\b.{0,5}\bto\b",
    r"\b(allows?|lets?|authori[sz]es?|permits?|grants?)\b.{0,10}\b(you|assistant|memora|ai|model|bot)\b",
    r"\b(always|automatically)\b.{0,15}\b(submit|buy|purchase|pay|approve|accept|confirm|send|transfer|execute|"
    r"place|sign|delete|share)\b",
    r"\b(developer|god|admin|jailbreak|unrestricted) mode\b",
]
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), re.IGNORECASE)


def instruction_problem(text: str) -> str | None:
    """Why `text` is an instruction to the assistant rather than a fact about the user, or None."""
    if _INSTRUCTION.search(text):
        return "an instruction granting permissions or overriding rules, not a fact about the user"
    return None


def _clean_content(content: str | None) -> tuple[str, str | None]:
    text = " ".join((content or "").split())
    if not is_storable(text):
        return storable(text), "content with a NUL character or invalid text the database cannot store"
    if not text:
        return text, "blank content"
    if len(text) > CONTENT_MAX:
        return text, f"content longer than {CONTENT_MAX} characters ({len(text)})"
    return text, instruction_problem(text)


def _id_problem(memory_id: int, *, owner_id: int, known: dict[int, KnownMemory], touched: set[int]) -> str | None:
    memory = known.get(memory_id)
    if memory is None:
        return f"unknown memory id {memory_id}"
    if memory.owner_id != owner_id:
        return f"memory {memory_id} belongs to another user"
    if not memory.active:
        return f"memory {memory_id} is not active"
    if memory_id in touched:
        return f"memory {memory_id} was already changed in this batch"
    return None


def _duplicate_reason(operation: Operation, existing: int) -> str:
    if existing == NEW_IN_THIS_ANSWER:
        return "a duplicate of another operation in this answer"
    if operation.id == existing:
        return "the content did not change"
    return f"the same content as active memory {existing}"


NEW_IN_THIS_ANSWER = 0


@dataclass
class _Walk:
    """Validation's view while it walks the answer: the plan so far, the active set as the operations
    accepted so far leave it (content -> memory id, or NEW_IN_THIS_ANSWER), and the ids they changed."""

    plan: Plan
    active: dict[int, str]
    contents: dict[str, int]
    touched: set[int] = field(default_factory=set)

    def drop(self, operation: Operation, reason: str) -> None:
        data = operation.as_dict()
        if "content" in data:
            data["content"] = storable(data["content"])
        self.plan.dropped.append({**data, "reason": reason})

    def take_out(self, memory_id: int) -> None:
        """An active memory this answer replaces or forgets: it can be neither changed again nor duplicated."""
        self.touched.add(memory_id)
        self.contents.pop(self.active[memory_id], None)


def _place_problem(operation: Operation, index: int, *, last_clear: int, max_operations: int | None) -> str | None:
    """Why the operation's place in the answer rules it out, or None."""
    if max_operations is not None and index >= max_operations:
        return f"over the limit of {max_operations} operations per answer"
    if operation.op == "clear" and index != last_clear:
        return "repeated clear"
    if operation.op == "add" and index < last_clear:
        return "added before a clear in the same answer"
    return None


def _accept_clear(walk: _Walk, operation: Operation) -> None:
    walk.plan.clear = True
    walk.contents = {}
    walk.touched.update(walk.active)
    walk.plan.applied.append(operation.as_dict())


def _accept_retract(walk: _Walk, operation: Operation) -> None:
    assert operation.id is not None
    walk.take_out(operation.id)
    walk.plan.retracts.append(operation.id)
    walk.plan.applied.append(operation.as_dict())


def _write_problem(walk: _Walk, operation: Operation, *, max_active: int | None) -> tuple[str, str | None]:
    """The cleaned sentence of an add or an update, and why it cannot be stored (None when it can)."""
    text, problem = _clean_content(operation.content)
    if problem is None and text in walk.contents:
        problem = _duplicate_reason(operation, walk.contents[text])
    if problem is None and operation.op == "add" and max_active is not None and len(walk.contents) >= max_active:
        problem = f"the user already has the maximum of {max_active} active memories"
    return text, problem


def _write(walk: _Walk, operation: Operation, *, numbers: dict[int, int], max_active: int | None) -> None:
    """An add or an update: dropped when its sentence cannot be stored, else planned with its sources."""
    text, problem = _write_problem(walk, operation, max_active=max_active)
    if problem:
        walk.drop(operation, problem)
        return
    message_ids = [numbers[n] for n in dict.fromkeys(operation.sources) if n in numbers]
    if operation.op == "add":
        walk.plan.adds.append((text, message_ids))
    else:
        assert operation.id is not None
        walk.take_out(operation.id)
        walk.plan.updates.append((operation.id, text, message_ids))
    walk.contents[text] = NEW_IN_THIS_ANSWER
    walk.plan.applied.append({**operation.as_dict(), "content": text})


def validate(
    operations: list[Operation],
    *,
    owner_id: int,
    known: dict[int, KnownMemory],
    active: dict[int, str],
    numbers: dict[int, int],
    max_operations: int | None = None,
    max_active: int | None = None,
) -> Plan:
    """Check each operation against the user's memories as they are now; record why any is dropped.

    `known` describes every id the operations name (whoever owns it); `active` is this user's active
    memories (id -> content); `numbers` maps the message numbers the judge was shown to message ids.
    Operations past `max_operations` are dropped, and so are adds that would take the user past
    `max_active` active memories.
    """
    walk = _Walk(plan=Plan(), active=active, contents={content: memory_id for memory_id, content in active.items()})
    last_clear = max((i for i, o in enumerate(operations) if o.op == "clear"), default=-1)
    for index, operation in enumerate(operations):
        problem = _place_problem(operation, index, last_clear=last_clear, max_operations=max_operations)
        if problem is None and operation.op in ("update", "retract"):
            assert operation.id is not None
            problem = _id_problem(operation.id, owner_id=owner_id, known=known, touched=walk.touched)
        if problem:
            walk.drop(operation, problem)
        elif operation.op == "clear":
            _accept_clear(walk, operation)
        elif operation.op == "retract":
            _accept_retract(walk, operation)
        else:
            _write(walk, operation, numbers=numbers, max_active=max_active)
    return walk.plan
