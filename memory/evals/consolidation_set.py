"""The consolidation golden set (consolidation.yaml) and its score: precision and recall of merges.

A merge is counted by the pairs of memories it puts together: a pair a good judge would not merge is a
false merge (precision: never merge what differs), a pair it would merge that the answer misses lowers
recall. Supersessions are scored the same way, by [old, new] pair. Any judge answer works: the demo
model's, or a real model's through the same call as a pass (memory.consolidation.judging).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.consolidation import judging
from memory.consolidation.candidates import Cluster, Item
from memory.evals import read_yaml

SET_PATH = Path(__file__).resolve().parent / "consolidation.yaml"
_KEY = re.compile(r"^(.*) \(key: ([a-z_]+)\)$")
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    kind: str
    cluster: Cluster
    merge: frozenset[frozenset[int]]
    supersede: frozenset[tuple[int, int]]


def load(path: Path = SET_PATH) -> list[Case]:
    cases = []
    for raw in read_yaml(path):
        items = []
        for number, text in enumerate(raw["memories"], start=1):
            match = _KEY.match(text)
            content, key = (match.group(1), match.group(2)) if match else (text, "")
            items.append(Item(id=number, content=content, created_at=START + timedelta(days=number), key=key))
        pairs = {frozenset(p) for group in raw.get("merge", []) for p in itertools.combinations(group, 2)}
        cases.append(
            Case(
                id=raw["id"],
                lang=raw["lang"],
                kind=raw["kind"],
                cluster=Cluster(project_id=None, items=tuple(items)),
                merge=frozenset(pairs),
                supersede=frozenset(tuple(p) for p in raw.get("supersede", [])),
            )
        )
    return cases


@dataclass
class Score:
    true_merges: int = 0
    false_merges: int = 0
    missed_merges: int = 0
    failed: list[str] = field(default_factory=list)
    false_cases: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        found = self.true_merges + self.false_merges
        return self.true_merges / found if found else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_merges + self.missed_merges
        return self.true_merges / wanted if wanted else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "merge_precision": round(self.precision, 3),
            "merge_recall": round(self.recall, 3),
            "true_merges": self.true_merges,
            "false_merges": self.false_merges,
            "missed_merges": self.missed_merges,
            "false_merge_cases": self.false_cases,
            "failed_clusters": self.failed,
        }


def score(cases: list[Case], answer: Callable[[list[dict[str, str]]], str]) -> Score:
    """Ask `answer` (a judge: messages -> raw JSON) about every case and score its merges."""
    total = Score()
    for case in cases:
        try:
            proposed = judging.parse(answer(judging.render(case.cluster)), case.cluster)
        except judging.ClusterFailed:
            total.failed.append(case.id)
            proposed = []
        merged = {frozenset(p) for m in proposed if m.op == "merge" for p in itertools.combinations(m.ids, 2)}
        total.true_merges += len(merged & case.merge)
        total.false_merges += len(merged - case.merge)
        total.missed_merges += len(case.merge - merged)
        if merged - case.merge:
            total.false_cases.append(case.id)
    return total


def demo_answer(messages: list[dict[str, str]]) -> str:
    from memory.consolidation.demo import demo_consolidation_judge

    return demo_consolidation_judge(messages) or json.dumps({"proposals": []})
