"""The golden set: loading and checking the case file (the format is described in README.md here).

A case is what the judge would be shown in production (the user's active memories and their pending
messages, split into conversations) and what a good judge does with it, in a form a program can check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from memory.evals import read_yaml
from memory.extraction import judge
from memory.extraction.batching import compact_prompt
from memory.extraction.judge.validation import Review, Scopes
from memory.extraction.shown import budget as shown_budget
from memory.extraction.shown import choose
from memory.models import MemoryKey
from memory.recall import Candidate

# Whose term index ranking keeps for the cases (memory.recall): no real user has id 0.
EVAL_USER_ID = 0
GOLDEN_PATH = Path(__file__).parent / "golden.yaml"
CATEGORIES = (
    "stable_fact",
    "other_people",
    "one_off",
    "restated_request",
    "task_progress",
    "system_of_record",
    "permission",
    "preference",
    "change_of_mind",
    "forget_one",
    "forget_all",
    "cross_break",
    "secret",
    "already_known",
    "mixed_language",
    "long_batch",
    "end_date",
    "sensitive",
    "keyed_preference",
    "project_scope",
)
# The project a case's messages come from (SPEC §9), as the judge is told of it: a made-up id.
EVAL_PROJECT_ID = 7
LANGUAGES = ("en", "zh", "mixed")
# The message ids the judge's numbers map to; far from the memory ids so a mix-up cannot pass.
FIRST_MESSAGE_ID = 1001


class CaseError(ValueError):
    """The case file does not follow the format."""


@dataclass(frozen=True)
class Expectation:
    """One operation a good answer contains.

    `must` holds groups of alternatives: the content contains at least one term of every group.
    `must_not` terms may not appear. Matching ignores case and repeated whitespace.
    `optional` operations are accepted when present and not missed when absent.
    """

    op: str
    id: int | None = None
    must: tuple[tuple[str, ...], ...] = ()
    must_not: tuple[str, ...] = ()
    optional: bool = False
    # SPEC §8 fields: the op carries this key; has an end date (True) or none (False); is sensitive
    # (by the judge's flag or the server's own vocabulary). None: not checked.
    key: str | None = None
    expires: bool | None = None
    sensitive: bool | None = None
    # SPEC §9: where the fact goes, "user" or "project" (an add without a scope goes to the user).
    scope: str | None = None

    def describe(self) -> str:
        parts = [self.op]
        if self.id is not None:
            parts.append(f"#{self.id}")
        if self.must:
            parts.append("with " + " + ".join("/".join(group) for group in self.must))
        if self.must_not:
            parts.append("without " + ", ".join(self.must_not))
        if self.optional:
            parts.append("(optional)")
        return " ".join(parts)


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    lang: str
    memories: dict[int, str]
    conversations: tuple[tuple[str, ...], ...]
    expect: tuple[Expectation, ...]
    note: str = ""
    # The offline demo judge's rules cover this case: CI requires the demo judge to pass it.
    demo: bool = False
    tags: tuple[str, ...] = field(default=())
    # The day every message was sent (and today's date), shown to the judge; None shows no dates.
    today: date | None = None
    # The keys the case's memories hold: key -> memory id.
    keys: dict[str, int] = field(default_factory=dict)
    # The project the messages come from (SPEC §9): its name, memory mode, and which of the memories are its.
    project: dict[str, Any] | None = None

    @property
    def required(self) -> tuple[Expectation, ...]:
        return tuple(e for e in self.expect if not e.optional)

    def judge_input(self) -> judge.JudgeInput:
        """Exactly what the pipeline would show the judge for this user and these messages."""
        held = {memory_id: key for key, memory_id in self.keys.items()}
        own = set(self.project.get("memories") or ()) if self.project else set()
        candidates = [
            Candidate(pk, content, key=held.get(pk, ""), project=EVAL_PROJECT_ID if pk in own else None)
            for pk, content in self.memories.items()
        ]
        sent = datetime.combine(self.today, datetime.min.time(), tzinfo=UTC).replace(hour=9) if self.today else None
        where: tuple[int | None, str, str] = (None, "", "")
        if self.project:
            where = (EVAL_PROJECT_ID, str(self.project.get("mode") or "shared"), str(self.project["name"]))
        pending: list[judge.PendingMessage] = []
        for index, conversation in enumerate(self.conversations):
            for text in conversation:
                number = FIRST_MESSAGE_ID + len(pending)
                pending.append(judge.PendingMessage(number, f"c{index + 1}", text, sent, *where))
        # The memories extraction would show beside these messages (memory.extraction.shown).
        memories = choose(user_id=EVAL_USER_ID, memories=candidates, pending=pending, budget=shown_budget())
        return judge.render_input(memories=memories, pending=pending, today=self.today, compact=compact_prompt())

    def scopes(self) -> Scopes:
        """Where validation puts the case's writes, and the scope of each of its memories (SPEC §9)."""
        if not self.project:
            return Scopes()
        own = set(self.project.get("memories") or ())
        return Scopes(
            project_id=EVAL_PROJECT_ID,
            isolated=self.project.get("mode") == "isolated",
            of={pk: EVAL_PROJECT_ID if pk in own else None for pk in self.memories},
        )

    def review(self) -> Review:
        """What validation checks end dates against: every message was sent `today`."""
        rendered = self.judge_input()
        return Review(days={mid: self.today for mid in rendered.numbers.values()} if self.today else {})


def _terms(value: Any, where: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str | int) and str(item).strip() for item in items):
        raise CaseError(f"{where}: expected a term or a list of terms")
    return tuple(str(item) for item in items)


def _expectation(data: Any, where: str) -> Expectation:
    if not isinstance(data, dict) or data.get("op") not in judge.OPS:
        raise CaseError(f"{where}: each expectation needs an op, one of {', '.join(judge.OPS)}")
    unknown = set(data) - {"op", "id", "must", "must_not", "optional", "key", "expires", "sensitive", "scope"}
    if unknown:
        raise CaseError(f"{where}: unknown keys {sorted(unknown)}")
    op = data["op"]
    memory_id = data.get("id")
    if (op in ("update", "retract")) != isinstance(memory_id, int):
        raise CaseError(f"{where}: {op} {'needs' if op in ('update', 'retract') else 'takes no'} id")
    must = tuple(_terms(group, where) for group in data.get("must") or [])
    must_not = tuple(t for item in data.get("must_not") or [] for t in _terms(item, where))
    if op in ("add", "update") and not must:
        raise CaseError(f"{where}: {op} needs `must` terms")
    for flag in ("expires", "sensitive"):
        if data.get(flag) is not None and not isinstance(data[flag], bool):
            raise CaseError(f"{where}: {flag} must be true or false")
    return Expectation(
        op=op,
        id=memory_id,
        must=must,
        must_not=must_not,
        optional=bool(data.get("optional")),
        key=data.get("key"),
        expires=data.get("expires"),
        sensitive=data.get("sensitive"),
        scope=data.get("scope"),
    )


CASE_KEYS = {
    "id", "category", "lang", "memories", "conversations", "expect", "note", "demo", "tags", "today", "keys", "project",
}  # fmt: skip


def _case(data: Any, index: int) -> Case:
    where = f"case {index + 1}"
    if not isinstance(data, dict):
        raise CaseError(f"{where}: not a mapping")
    where = f"case {data.get('id') or index + 1}"
    _check_header(data, where)
    memories = _memories(data.get("memories") or {}, where)
    conversations = _conversations(data.get("conversations"), where)
    expect = tuple(_expectation(e, where) for e in data.get("expect") or [])
    for expectation in expect:
        if expectation.id is not None and expectation.id not in memories:
            raise CaseError(f"{where}: expectation names memory {expectation.id}, which the case does not have")
    return Case(
        id=data["id"],
        category=data["category"],
        lang=data["lang"],
        memories=dict(memories),
        conversations=tuple(tuple(c) for c in conversations),
        expect=expect,
        note=str(data.get("note") or ""),
        demo=bool(data.get("demo")),
        tags=tuple(data.get("tags") or ()),
        today=_today(data.get("today"), where),
        keys=_keys(data.get("keys"), memories, where),
        project=_project(data.get("project"), memories, where),
    )


def _check_header(data: dict[str, Any], where: str) -> None:
    unknown = set(data) - CASE_KEYS
    if unknown:
        raise CaseError(f"{where}: unknown keys {sorted(unknown)}")
    if not isinstance(data.get("id"), str) or not data["id"]:
        raise CaseError(f"{where}: needs an id")
    if data.get("category") not in CATEGORIES:
        raise CaseError(f"{where}: category must be one of {', '.join(CATEGORIES)}")
    if data.get("lang") not in LANGUAGES:
        raise CaseError(f"{where}: lang must be one of {', '.join(LANGUAGES)}")


def _memories(memories: Any, where: str) -> Any:
    typed = isinstance(memories, dict) and all(isinstance(k, int) and isinstance(v, str) for k, v in memories.items())
    if not typed:
        raise CaseError(f"{where}: memories must map integer ids to sentences")
    return memories


def _conversations(conversations: Any, where: str) -> Any:
    if (
        not isinstance(conversations, list)
        or not conversations
        or not all(isinstance(c, list) and c and all(isinstance(m, str) for m in c) for c in conversations)
    ):
        raise CaseError(f"{where}: conversations must be a list of lists of messages")
    return conversations


def _project(value: Any, memories: dict[int, str], where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    own = value.get("memories") or [] if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("name"), str)
        or value.get("mode", "shared") not in ("shared", "isolated")
        or not all(pk in memories for pk in own or [])
    ):
        raise CaseError(f"{where}: project needs a name, a mode (shared or isolated) and its memories' ids")
    return dict(value)


def _today(value: Any, where: str) -> date | None:
    if value is None or isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise CaseError(f"{where}: today must be a YYYY-MM-DD date") from None


def _keys(value: Any, memories: dict[int, str], where: str) -> dict[str, int]:
    keys = value or {}
    if not isinstance(keys, dict) or not all(k in MemoryKey.values and v in memories for k, v in keys.items()):
        raise CaseError(f"{where}: keys must map preference keys to the case's memory ids")
    return dict(keys)


def load_cases(path: Path | str = GOLDEN_PATH) -> list[Case]:
    """Read and check a case file. Raises CaseError (or OSError) with what is wrong."""
    try:
        data = read_yaml(path)
    except yaml.YAMLError as exc:
        raise CaseError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, list):
        raise CaseError(f"{path}: expected a list of cases")
    cases = [_case(item, i) for i, item in enumerate(data)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise CaseError(f"case {case.id}: the id is used twice")
        seen.add(case.id)
    return cases
