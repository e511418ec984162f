"""How each of the judge's operations is checked against the user's memories as they are now: the plan
of what will be applied, and what is dropped with its reason. Pure (no database): the pipeline loads
the rows, calls `validate`, and commits the plan."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from memory import lexicon
from memory.extraction.judge import Operation
from memory.extraction.judge.content import clean_content, expiry_problem, storable
from memory.models import MemoryKey

# How the user's memory_review setting (accounts.User.MemoryReview) treats a learned, non-explicit fact.
REVIEW_AUTO, REVIEW_SENSITIVE, REVIEW_ALL = "auto", "sensitive", "all"


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
    # Its scope (SPEC §9): None about the user, else the project's id.
    project_id: int | None = None


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


def _id_problem(
    memory_id: int,
    *,
    owner_id: int,
    known: dict[int, KnownMemory],
    touched: set[int],
    shown: frozenset[int] | None = None,
) -> str | None:
    memory = known.get(memory_id)
    if memory is None:
        return f"unknown memory id {memory_id}"
    if memory.owner_id != owner_id:
        return f"memory {memory_id} belongs to another user"
    if not memory.active:
        return f"memory {memory_id} is not active"
    if memory_id in touched:
        return f"memory {memory_id} was already changed in this batch"
    if shown is not None and memory_id not in shown:
        return f"memory {memory_id} was not shown to the judge"
    return None


def _duplicate_reason(operation: Operation, existing: int) -> str:
    if existing == NEW_IN_THIS_ANSWER:
        return "a duplicate of another operation in this answer"
    if operation.id == existing:
        return "the content did not change"
    return f"the same content as active memory {existing}"


NEW_IN_THIS_ANSWER = 0

Scoped = tuple["int | None", str]  # (the scope's project id or None, a sentence or a key)


@dataclass(frozen=True)
class Scopes:
    """Where a batch's writes go (SPEC §9, memory.scopes): the project its messages come from (None: none),
    whether that project is isolated, and the scope of each active memory the batch knows (by id).

    Outside projects everything is the user's. In a shared project an op's `"scope"` decides: "project" for
    the project, "user" (the default of an add) for the user; an update without one stays in the scope of
    the memory it replaces, and one that names the other scope adds the fact there instead (the old one
    stays where it is). In an isolated project everything goes to the project, whatever the op says."""

    project_id: int | None = None
    isolated: bool = False
    of: dict[int, int | None] = field(default_factory=dict)

    def target(self, operation: Operation) -> int | None:
        if self.project_id is None:
            return None
        if self.isolated or operation.scope == "project":
            return self.project_id
        if operation.scope == "user":
            return None
        return self.of.get(operation.id) if operation.op == "update" and operation.id is not None else None


@dataclass
class _Walk:
    """Validation's view while it walks the answer: the plan so far, the active set as the operations
    accepted so far leave it (content -> memory id, or NEW_IN_THIS_ANSWER), and the ids they changed."""

    plan: Plan
    active: dict[int, str]
    contents: dict[Scoped, int]  # (scope, sentence) -> memory id
    touched: set[int] = field(default_factory=set)

    review: Review = field(default_factory=Review)
    keys: dict[Scoped, int] = field(default_factory=dict)  # (scope, key) -> active memory id (NEW_IN_THIS_ANSWER)
    scopes: Scopes = field(default_factory=Scopes)

    def drop(self, operation: Operation, reason: str) -> None:
        data = operation.as_dict()
        if "content" in data:
            # The record keeps why, never the secret itself.
            data["content"] = lexicon.mask_credentials(storable(data["content"]))
        self.plan.dropped.append({**data, "reason": reason})

    @classmethod
    def start(
        cls,
        *,
        active: dict[int, str],
        review: Review | None,
        keys: dict[str, int] | dict[Scoped, int] | None,
        scopes: Scopes | None,
    ) -> _Walk:
        scopes = scopes or Scopes()
        return cls(
            plan=Plan(),
            active=active,
            contents={(scopes.of.get(pk), content): pk for pk, content in active.items()},
            review=review or Review(),
            keys={k if isinstance(k, tuple) else (None, k): v for k, v in (keys or {}).items()},
            scopes=scopes,
        )

    def record(self, operation: Operation, write: Write) -> None:
        """A write planned: what it says and the key it sets are taken for the rest of the answer."""
        self.plan.writes.append(write)
        self.contents[(write.project_id, write.content)] = NEW_IN_THIS_ANSWER
        if write.key:
            self.keys[(write.project_id, write.key)] = NEW_IN_THIS_ANSWER
        self.plan.applied.append(_applied(operation, write))

    def take_out(self, memory_id: int) -> None:
        """An active memory this answer replaces or forgets: it can be neither changed again nor duplicated."""
        self.touched.add(memory_id)
        self.contents.pop((self.scopes.of.get(memory_id), self.active[memory_id]), None)
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


def _write_problem(
    walk: _Walk, operation: Operation, *, max_active: int | None, scope: int | None
) -> tuple[str, str | None]:
    """The cleaned sentence of an add or an update, and why it cannot be stored in `scope` (None when it can)."""
    text, problem = clean_content(operation.content)
    if problem is None and (scope, text) in walk.contents:
        problem = _duplicate_reason(operation, walk.contents[(scope, text)])
    if problem is None and operation.op == "add" and max_active is not None and len(walk.contents) >= max_active:
        problem = f"the user already has the maximum of {max_active} active memories"
    return text, problem


def _key_of(walk: _Walk, operation: Operation, scope: int | None) -> tuple[str, int | None, str | None]:
    """The operation's key (unknown keys are ignored), the active memory holding that key in `scope` that this
    op replaces, and why the op cannot be applied as it is (None when it can)."""
    key = operation.key.strip()
    if key not in MemoryKey.values:
        # An update keeps the key of the memory it replaces.
        held = [k for (_, k), holder in walk.keys.items() if holder == operation.id and operation.op == "update"]
        return (held[0] if held else ""), operation.id, None
    holder = walk.keys.get((scope, key))
    if holder is None or holder == operation.id:
        return key, operation.id, None
    if holder == NEW_IN_THIS_ANSWER:
        return key, None, f"another operation in this answer already sets {key}"
    if operation.op == "update":
        return key, None, f"key {key} belongs to active memory {holder}, not {operation.id}"
    return key, holder, None  # a second add of a key: an update of the memory holding it


def _write(walk: _Walk, operation: Operation, *, numbers: dict[int, int], max_active: int | None) -> None:
    """An add or an update: dropped when its sentence, end date or key cannot be stored, else planned."""
    operation, scope, key, problem = _target(walk, operation)
    text, content_problem = _write_problem(walk, operation, max_active=max_active, scope=scope)
    problem = problem or content_problem
    message_ids = [numbers[n] for n in dict.fromkeys(operation.sources) if n in numbers]
    expires_at = None
    if problem is None:
        expires_at, problem = _expiry(walk, operation.expires, message_ids)
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
        project_id=scope,
    )
    walk.record(operation, write)


def _target(walk: _Walk, operation: Operation) -> tuple[Operation, int | None, str, str | None]:
    """Where an add or an update goes, the key it holds and the problem with that key, as an operation on
    the memory it really replaces (a second value of a key updates the memory holding it)."""
    scope = walk.scopes.target(operation)
    if operation.op == "update" and walk.scopes.of.get(operation.id) != scope:  # type: ignore[arg-type]
        operation = dataclasses.replace(operation, op="add", id=None)  # the fact goes to the other scope too
    key, replaces, problem = _key_of(walk, operation, scope)
    if problem is None and replaces is not None and replaces != operation.id:
        operation = dataclasses.replace(operation, op="update", id=replaces, key=key)
    return operation, scope, key, problem


def _expiry(walk: _Walk, expires: str | None, message_ids: list[int]) -> tuple[datetime | None, str | None]:
    """The end date, checked against the day its sources were sent (the batch's latest when it names none)."""
    if expires is None:
        return None, None
    days = [walk.review.days[mid] for mid in message_ids if mid in walk.review.days]
    sent = max(days or walk.review.days.values(), default=None)
    return expiry_problem(expires, sent=sent)


def _applied(operation: Operation, write: Write) -> dict[str, Any]:
    """The operation as the run records it applied: the cleaned sentence, and whether it is sensitive or waits."""
    applied = {**operation.as_dict(), "content": write.content}
    if write.project_id is not None:
        applied["scope"] = "project"
    if write.sensitive:
        applied["sensitive"] = True
    if write.suggested:
        applied["suggested"] = True
    return applied


def validate(
    operations: list[Operation],
    *,
    owner_id: int,
    known: dict[int, KnownMemory],
    active: dict[int, str],
    numbers: dict[int, int],
    max_operations: int | None = None,
    max_active: int | None = None,
    keys: dict[str, int] | dict[Scoped, int] | None = None,
    review: Review | None = None,
    shown: frozenset[int] | None = None,
    scopes: Scopes | None = None,
) -> Plan:
    """Check each operation against the user's memories as they are now; record why any is dropped.

    `known` describes every id the operations name (whoever owns it); `active` is this user's active
    memories (id -> content); `numbers` maps the message numbers the judge was shown to message ids.
    Operations past `max_operations` are dropped, and so are adds that would take the user past
    `max_active` active memories. `keys` maps each key an active memory holds to that memory's id; a
    second add of a key becomes an update of its holder. `review` decides which writes wait as
    suggestions and gives the messages' days, against which end dates are checked. `shown` (None: all)
    are the memories the judge was shown: an update or a retract may name only those. `scopes` says where
    the batch's writes go and the scope of each active memory (`keys` may then be by (scope, key)); without
    it everything is the user's.
    """
    walk = _Walk.start(active=active, review=review, keys=keys, scopes=scopes)
    last_clear = max((i for i, o in enumerate(operations) if o.op == "clear"), default=-1)
    for index, operation in enumerate(operations):
        problem = _place_problem(operation, index, last_clear=last_clear, max_operations=max_operations)
        if problem is None and operation.id is not None and operation.op in ("update", "retract"):
            problem = _id_problem(operation.id, owner_id=owner_id, known=known, touched=walk.touched, shown=shown)
        if problem:
            walk.drop(operation, problem)
        else:
            _accept(walk, operation, numbers=numbers, max_active=max_active)
    return walk.plan


def _accept(walk: _Walk, operation: Operation, *, numbers: dict[int, int], max_active: int | None) -> None:
    if operation.op == "clear":
        _accept_clear(walk, operation)
    elif operation.op == "retract":
        _accept_retract(walk, operation)
    else:
        _write(walk, operation, numbers=numbers, max_active=max_active)
