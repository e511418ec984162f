"""Scoring the judge's answers against the golden set. Pure: no model, no database.

An answer goes through exactly what the pipeline does with it — `judge.parse_output` (strict) and
`validation.validate` (memory.extraction.judge) against the case's memories — and what would be applied
is compared with the case's expectations:

- an applied operation that meets an expectation is a hit (true positive);
- an applied operation that meets none is a false positive (a wrong memory, a wrong id, an extra add);
- a required expectation that no operation meets is a miss (false negative);
- a case passes when the answer is well formed, nothing was missed and nothing extra was applied.

Precision = hits / (hits + false positives), recall = hits / (hits + misses), and the score is the
share of cases that pass (exact-case accuracy). An answer that is not the requested JSON shape, or a
call that failed or ran out of time, fails its case and misses everything the case expects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from memory.evals.cases import Case, Expectation
from memory.extraction import judge
from memory.extraction.judge import validation

# Every case belongs to one user; the ids in its memories are that user's.
EVAL_OWNER_ID = 1


@dataclass
class CaseScore:
    """One judge answer to one case, scored."""

    case_id: str
    category: str
    lang: str
    passed: bool = False
    hits: int = 0
    false_positives: int = 0
    misses: int = 0
    malformed: bool = False
    error: str = ""  # the call failed or ran out of time
    problems: list[str] = field(default_factory=list)
    raw: str = ""
    applied: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    ms: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case_id,
            "category": self.category,
            "lang": self.lang,
            "passed": self.passed,
            "hits": self.hits,
            "false_positives": self.false_positives,
            "misses": self.misses,
            "malformed": self.malformed,
            "error": self.error,
            "problems": self.problems,
            "raw": self.raw,
            "applied": self.applied,
            "dropped": self.dropped,
            "ms": self.ms,
            "prompt_tokens": self.prompt_tokens,
            "answer_tokens": self.answer_tokens,
        }


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def content_meets(expectation: Expectation, content: str) -> bool:
    text = _normalise(content)
    return all(any(_normalise(term) in text for term in group) for group in expectation.must) and not any(
        _normalise(term) in text for term in expectation.must_not
    )


def operation_meets(expectation: Expectation, operation: dict[str, Any]) -> bool:
    if operation.get("op") != expectation.op:
        return False
    if expectation.id is not None and operation.get("id") != expectation.id:
        return False
    if expectation.op not in ("add", "update"):
        return True
    if expectation.key is not None and operation.get("key", "") != expectation.key:
        return False
    if expectation.expires is not None and ("expires" in operation) != expectation.expires:
        return False
    if expectation.sensitive is not None and bool(operation.get("sensitive")) != expectation.sensitive:
        return False
    if expectation.scope is not None and (operation.get("scope") or "user") != expectation.scope:
        return False
    return content_meets(expectation, str(operation.get("content") or ""))


def _match(expectations: list[Expectation], operations: list[dict[str, Any]], taken: dict[int, int]) -> None:
    """Maximum matching of expectations to operations (augmenting paths); `taken` maps op -> expectation."""

    def place(e: int, seen: set[int]) -> bool:
        for o, operation in enumerate(operations):
            if o in seen or not operation_meets(expectations[e], operation):
                continue
            seen.add(o)
            if o not in taken or place(taken[o], seen):
                taken[o] = e
                return True
        return False

    for e in range(len(expectations)):
        place(e, set())


@cache
def prompt_example() -> Any:
    """The example answer shown in the judge prompt (a model that copies it has not judged anything)."""
    found = re.search(r"```json\s*(.*?)```", judge.judge_prompt(), re.S)
    return json.loads(found[1]) if found else None


def _shape_problem(raw: str, reason: str) -> str:
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return f"not the requested JSON shape: {reason}"
    if data == prompt_example():
        return "echoed the example answer from the prompt"
    return f"not the requested JSON shape: {reason}"


def score_answer(case: Case, raw: str | None, *, error: str = "", limits: Mapping[str, int] | None = None) -> CaseScore:
    """Score one answer (or a failed call: `raw` None and `error` set) to `case`.

    `limits` are the extra arguments extraction gives `validation.validate` (see `runner.validation_limits`).
    """
    score = CaseScore(case_id=case.id, category=case.category, lang=case.lang, raw=raw or "")
    required = list(case.required)
    if raw is None:
        score.error = error or "no answer"
        score.misses = len(required)
        score.problems.append(f"the call failed: {score.error}")
        return score
    try:
        operations = judge.parse_output(raw)
    except judge.MalformedOutput as exc:
        score.malformed = True
        score.misses = len(required)
        score.problems.append(_shape_problem(raw, str(exc)))
        return score
    rendered, scopes = case.judge_input(), case.scopes()
    known = {
        memory_id: validation.KnownMemory(owner_id=EVAL_OWNER_ID, active=True, content=content)
        for memory_id, content in case.memories.items()
    }
    plan = validation.validate(
        operations,
        owner_id=EVAL_OWNER_ID,
        known=known,
        active=dict(case.memories),
        numbers=rendered.numbers,
        keys={(scopes.of.get(pk), key): pk for key, pk in case.keys.items()},
        review=case.review(),
        scopes=scopes,
        shown=rendered.memory_ids,
        max_operations=(limits or {}).get("max_operations"),
        max_active=(limits or {}).get("max_active"),
    )
    score.applied, score.dropped = plan.applied, plan.dropped
    taken: dict[int, int] = {}
    _match(required, plan.applied, taken)
    score.hits = len(taken)
    score.misses = len(required) - score.hits
    optional = [e for e in case.expect if e.optional]
    rest = [o for i, o in enumerate(plan.applied) if i not in taken]
    optional_taken: dict[int, int] = {}
    _match(optional, rest, optional_taken)
    extra = [o for i, o in enumerate(rest) if i not in optional_taken]
    score.false_positives = len(extra)
    matched = set(taken.values())
    score.problems += [f"missed: {required[i].describe()}" for i in range(len(required)) if i not in matched]
    score.problems += [f"unexpected: {json.dumps(o, ensure_ascii=False)}" for o in extra]
    score.problems += [f"dropped by validation: {json.dumps(d, ensure_ascii=False)}" for d in plan.dropped]
    score.passed = not score.misses and not score.false_positives
    return score


# --- aggregates ----------------------------------------------------------------------------------


@dataclass
class Tally:
    """Totals over a set of scored answers."""

    cases: int = 0
    passed: int = 0
    hits: int = 0
    false_positives: int = 0
    misses: int = 0
    malformed: int = 0
    errors: int = 0
    dropped: int = 0  # operations the judge proposed and validation refused
    ms: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0

    def add(self, score: CaseScore) -> None:
        self.cases += 1
        self.passed += score.passed
        self.hits += score.hits
        self.false_positives += score.false_positives
        self.misses += score.misses
        self.malformed += score.malformed
        self.errors += bool(score.error)
        self.dropped += len(score.dropped)
        self.ms += score.ms
        self.prompt_tokens += score.prompt_tokens
        self.answer_tokens += score.answer_tokens

    @property
    def precision(self) -> float | None:
        """Share of applied operations that were right; None when nothing was applied."""
        applied = self.hits + self.false_positives
        return self.hits / applied if applied else None

    @property
    def recall(self) -> float | None:
        """Share of expected operations that were applied; None when nothing was expected."""
        expected = self.hits + self.misses
        return self.hits / expected if expected else None

    @property
    def accuracy(self) -> float:
        """Share of cases answered exactly right: the score."""
        return self.passed / self.cases if self.cases else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passed": self.passed,
            "accuracy": round(self.accuracy, 4),
            "precision": None if self.precision is None else round(self.precision, 4),
            "recall": None if self.recall is None else round(self.recall, 4),
            "hits": self.hits,
            "false_positives": self.false_positives,
            "misses": self.misses,
            "malformed": self.malformed,
            "errors": self.errors,
            "dropped": self.dropped,
            "mean_ms": round(self.ms / self.cases) if self.cases else 0,
            "prompt_tokens": self.prompt_tokens,
            "answer_tokens": self.answer_tokens,
        }


@dataclass
class Report:
    overall: Tally
    by_category: dict[str, Tally]
    by_lang: dict[str, Tally]
    scores: list[CaseScore]

    @property
    def failures(self) -> list[CaseScore]:
        return [s for s in self.scores if not s.passed]


def summarise(scores: Iterable[CaseScore]) -> Report:
    scores = list(scores)
    overall = Tally()
    by_category: dict[str, Tally] = {}
    by_lang: dict[str, Tally] = {}
    for score in scores:
        overall.add(score)
        by_category.setdefault(score.category, Tally()).add(score)
        by_lang.setdefault(score.lang, Tally()).add(score)
    return Report(overall=overall, by_category=by_category, by_lang=by_lang, scores=scores)
