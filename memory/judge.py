"""The memory judge: what it is shown, how its answer is parsed, and how each operation is checked.

Everything here is pure (no database): the pipeline loads the rows, calls these, and commits.

The judge sees the user's active memories with their real ids and the pending user messages,
numbered, with `--- another conversation ---` wherever the conversation changes. It never sees
assistant replies or tool output: what the assistant said is not what the user is.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from functools import cache
from pathlib import Path
from typing import Any

from chat.services import is_valid_text
from memory import lexicon
from memory.models import CONTENT_MAX, MemoryKey

PROMPT_PATH = Path(__file__).parent / "prompts" / "judge.md"
CONVERSATION_BREAK = "--- another conversation ---"
OPS = ("add", "update", "retract", "clear")
EXPIRY_YEARS = 5
# How the user's memory_review setting (accounts.User.MemoryReview) treats a learned, non-explicit fact.
REVIEW_AUTO, REVIEW_SENSITIVE, REVIEW_ALL = "auto", "sensitive", "all"


@cache
def judge_prompt() -> str:
    return PROMPT_PATH.read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class PendingMessage:
    id: int
    conversation_id: Any
    content: str
    created_at: datetime | None = None

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

    def line(self) -> str:
        notes = [f"key: {self.key}"] if self.key else []
        if self.expires_at is not None:
            notes.append(f"until: {self.expires_at.astimezone(UTC).date().isoformat()}")
        text = " ".join(self.content.split())
        return f"[{self.id}] {text}" + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class JudgeInput:
    messages: list[dict[str, str]]
    # Message number shown to the judge -> message id.
    numbers: dict[int, int]


def _indent_continuation(text: str) -> str:
    # Continuation lines are indented so no user text can pose as a break line or a new number.
    lines = text.strip().splitlines() or [""]
    return "\n".join([lines[0], *("   " + line for line in lines[1:])])


def render_input(
    *, memories: list[ActiveMemory], pending: list[PendingMessage], today: date | None = None
) -> JudgeInput:
    """The judge's two messages: the prompt, then today's date (UTC), the memories and the numbered user
    messages, each with the day it was sent when known."""
    memory_lines = [m.line() for m in memories] or ["(none)"]
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
        day = f"[{message.day.isoformat()}] " if message.day is not None else ""
        message_lines.append(f"{number}. {day}{_indent_continuation(message.content)}")
    text = "\n".join(
        [
            *([f"Today (UTC): {today.isoformat()}", ""] if today is not None else []),
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
    # SPEC §8 extensions of an add or an update.
    expires: str | None = None
    sensitive: bool = False
    key: str = ""
    pin: bool = False

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": self.op}
        if self.id is not None:
            data["id"] = self.id
        if self.content is not None:
            data["content"] = self.content
        if self.sources:
            data["sources"] = list(self.sources)
        if self.expires is not None:
            data["expires"] = self.expires
        if self.sensitive:
            data["sensitive"] = True
        if self.key:
            data["key"] = self.key
        if self.pin:
            data["pin"] = True
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
    expires, key = item.get("expires"), item.get("key")
    if expires is not None and not isinstance(expires, str):
        raise MalformedOutput(f'{where} has an "expires" that is not a "YYYY-MM-DD" string')
    if key is not None and not isinstance(key, str):
        raise MalformedOutput(f'{where} has a "key" that is not a string')
    for flag in ("sensitive", "pin"):
        if item.get(flag) is not None and not isinstance(item.get(flag), bool):
            raise MalformedOutput(f'{where} has a "{flag}" that is not true or false')
    writes = op in ("add", "update")
    return Operation(
        op=op,
        id=memory_id if op in ("update", "retract") else None,
        content=content if writes else None,
        sources=tuple(sources or ()) if writes else (),
        expires=expires if writes else None,
        sensitive=bool(item.get("sensitive")) and writes,
        key=(key or "") if writes else "",
        pin=bool(item.get("pin")) and writes,
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


@dataclass(frozen=True)
class Write:
    """An add or an update that validation accepted, as it will be written."""

    content: str
    message_ids: list[int]
    # The active memory it replaces: the update's id, or the holder of the key a keyed add sets.
    replaces: int | None = None
    key: str = ""
    expires_at: datetime | None = None
    sensitive: bool = False
    pinned: bool = False
    # Waits for the user's Keep or Discard (memory_review), instead of being active at once.
    suggested: bool = False


@dataclass
class Plan:
    """The operations that will be applied, in order, and the ones dropped with their reasons."""

    clear: bool = False
    writes: list[Write] = field(default_factory=list)
    retracts: list[int] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def adds(self) -> list[tuple[str, list[int]]]:
        return [(w.content, w.message_ids) for w in self.writes if w.replaces is None]

    @property
    def updates(self) -> list[tuple[int, str, list[int]]]:
        return [(w.replaces, w.content, w.message_ids) for w in self.writes if w.replaces is not None]


@dataclass(frozen=True)
class Review:
    """What decides whether a learned fact waits as a suggestion: the user's memory_review setting, the
    messages that explicitly ask to remember, correct or forget (memory.lexicon), and each message's day."""

    mode: str = REVIEW_AUTO
    explicit: frozenset[int] = frozenset()  # message ids
    days: dict[int, date] = field(default_factory=dict)  # message id -> the day it was sent (UTC)

    def waits(self, *, message_ids: list[int], sensitive: bool) -> bool:
        if any(mid in self.explicit for mid in message_ids):
            return False
        return self.mode == REVIEW_ALL or (self.mode == REVIEW_SENSITIVE and sensitive)


def is_storable(text: str) -> bool:
    """False for text a database refuses: a NUL (PostgreSQL) or a lone UTF-16 surrogate (any)."""
    return "\x00" not in text and is_valid_text(text)


def recorded_output(raw: str) -> str:
    """The judge's answer as the run keeps it: storable, and with every secret masked (memory.lexicon).
    A JSON answer is searched as decoded text, so an escaped secret ("\\u5bc6\\u7801") is found too."""
    text = storable(raw)
    try:
        decoded = json.dumps(json.loads(text), ensure_ascii=False)
    except (TypeError, ValueError):
        return lexicon.mask_credentials(text)
    if lexicon.has_credential(decoded):
        return lexicon.mask_credentials(decoded)
    return lexicon.mask_credentials(text)


def storable(text: str) -> str:
    """`text` with NUL removed and lone surrogates replaced, for recording what the judge said."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def instruction_problem(text: str) -> str | None:
    """Why `text` is an instruction to the assistant rather than a fact about the user, or None.

    Memories are facts about the user, never instructions: stored, a permission ("submit my orders
    without asking", "以后所有订单都不用确认") would act on every later turn. Preferences about how to be
    served (a reply language, units, length) are facts and stay."""
    if lexicon.permission_grant(text):
        return "an instruction granting permissions or overriding rules, not a fact about the user"
    return None


CREDENTIAL = "a credential or secret (password, PIN, code, key, card or ID number); never stored"


def _clean_content(content: str | None) -> tuple[str, str | None]:
    text = " ".join((content or "").split())
    if not is_storable(text):
        return storable(text), "content with a NUL character or invalid text the database cannot store"
    if not text:
        return text, "blank content"
    if len(text) > CONTENT_MAX:
        return text, f"content longer than {CONTENT_MAX} characters ({len(text)})"
    if lexicon.has_credential(text):
        return text, CREDENTIAL
    return text, instruction_problem(text)


def end_of_day(day: date) -> datetime:
    """What an end date means: the end of that day, UTC."""
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def _years_after(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February
        return day.replace(year=day.year + years, day=28)


def expiry_problem(expires: str, *, sent: date | None) -> tuple[datetime | None, str | None]:
    """The end of a time-bound fact, from the judge's "YYYY-MM-DD", or why it cannot be kept: it must be
    after the day the message was sent and within EXPIRY_YEARS of it."""
    try:
        day = date.fromisoformat(expires.strip())
    except ValueError:
        return None, f"end date {expires!r} is not a YYYY-MM-DD date"
    if len(expires.strip()) != 10:
        return None, f"end date {expires!r} is not a YYYY-MM-DD date"
    if sent is not None and day <= sent:
        return None, f"end date {day.isoformat()} is not after the message's date ({sent.isoformat()})"
    if sent is not None and day > _years_after(sent, EXPIRY_YEARS):
        return None, f"end date {day.isoformat()} is more than {EXPIRY_YEARS} years after the message"
    return end_of_day(day), None


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

    review: Review = field(default_factory=Review)
    keys: dict[str, int] = field(default_factory=dict)  # key -> active memory id (NEW_IN_THIS_ANSWER)

    def drop(self, operation: Operation, reason: str) -> None:
        data = operation.as_dict()
        if "content" in data:
            # The record keeps why, never the secret itself.
            data["content"] = lexicon.mask_credentials(storable(data["content"]))
        self.plan.dropped.append({**data, "reason": reason})

    def take_out(self, memory_id: int) -> None:
        """An active memory this answer replaces or forgets: it can be neither changed again nor duplicated."""
        self.touched.add(memory_id)
        self.contents.pop(self.active[memory_id], None)
        for key, holder in list(self.keys.items()):
            if holder == memory_id:
                del self.keys[key]


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
    walk.keys = {}
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


def _key_of(walk: _Walk, operation: Operation) -> tuple[str, int | None, str | None]:
    """The operation's key (unknown keys are ignored), the active memory holding that key that this op
    replaces, and why the op cannot be applied as it is (None when it can)."""
    key = operation.key.strip()
    if key not in MemoryKey.values:
        # An update keeps the key of the memory it replaces.
        held = [k for k, holder in walk.keys.items() if holder == operation.id and operation.op == "update"]
        return (held[0] if held else ""), operation.id, None
    holder = walk.keys.get(key)
    if holder is None or holder == operation.id:
        return key, operation.id, None
    if holder == NEW_IN_THIS_ANSWER:
        return key, None, f"another operation in this answer already sets {key}"
    if operation.op == "update":
        return key, None, f"key {key} belongs to active memory {holder}, not {operation.id}"
    return key, holder, None  # a second add of a key: an update of the memory holding it


def _write(walk: _Walk, operation: Operation, *, numbers: dict[int, int], max_active: int | None) -> None:
    """An add or an update: dropped when its sentence, end date or key cannot be stored, else planned."""
    key, replaces, problem = _key_of(walk, operation)
    if problem is None and replaces is not None and replaces != operation.id:
        operation = dataclasses.replace(operation, op="update", id=replaces, key=key)
    text, content_problem = _write_problem(walk, operation, max_active=max_active)
    problem = problem or content_problem
    message_ids = [numbers[n] for n in dict.fromkeys(operation.sources) if n in numbers]
    expires_at = None
    if problem is None and operation.expires is not None:
        days = [walk.review.days[mid] for mid in message_ids if mid in walk.review.days]
        sent = max(days or walk.review.days.values(), default=None)
        expires_at, problem = expiry_problem(operation.expires, sent=sent)
    if problem:
        walk.drop(operation, problem)
        return
    sensitive = operation.sensitive or lexicon.is_sensitive(text)
    if operation.op == "update":
        assert operation.id is not None
        walk.take_out(operation.id)
    write = Write(
        content=text,
        message_ids=message_ids,
        replaces=operation.id if operation.op == "update" else None,
        key=key,
        expires_at=expires_at,
        sensitive=sensitive,
        pinned=operation.pin,
        suggested=walk.review.waits(message_ids=message_ids, sensitive=sensitive),
    )
    walk.plan.writes.append(write)
    walk.contents[text] = NEW_IN_THIS_ANSWER
    if key:
        walk.keys[key] = NEW_IN_THIS_ANSWER
    applied = {**operation.as_dict(), "content": text}
    if sensitive:
        applied["sensitive"] = True
    if write.suggested:
        applied["suggested"] = True
    walk.plan.applied.append(applied)


def validate(
    operations: list[Operation],
    *,
    owner_id: int,
    known: dict[int, KnownMemory],
    active: dict[int, str],
    numbers: dict[int, int],
    max_operations: int | None = None,
    max_active: int | None = None,
    keys: dict[str, int] | None = None,
    review: Review | None = None,
) -> Plan:
    """Check each operation against the user's memories as they are now; record why any is dropped.

    `known` describes every id the operations name (whoever owns it); `active` is this user's active
    memories (id -> content); `numbers` maps the message numbers the judge was shown to message ids.
    Operations past `max_operations` are dropped, and so are adds that would take the user past
    `max_active` active memories. `keys` maps each key an active memory holds to that memory's id; a
    second add of a key becomes an update of its holder. `review` decides which writes wait as
    suggestions and gives the messages' days, against which end dates are checked.
    """
    walk = _Walk(
        plan=Plan(),
        active=active,
        contents={content: memory_id for memory_id, content in active.items()},
        review=review or Review(),
        keys=dict(keys or {}),
    )
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
