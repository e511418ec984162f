"""The consolidation judge: what it is shown for one cluster, how it is asked, and how its answer is checked.

It is asked like the extraction judge (memory.extraction.judge.call): MEMORY_MODEL through the same provider, in the
provider's queue as background work (chat.model_queue), within MEMORY_JUDGE_TIMEOUT. Its answer is
validated strictly: any malformed proposal fails the whole cluster (never the pass), and ids must be the
cluster's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from chat import model_queue
from chat.llm import ChatModel, get_chat_model
from memory.consolidation.candidates import Cluster
from memory.models import CONTENT_MAX

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
PROMPT_PATH = PROMPTS / "consolidation.md"
SCHEMA_PATH = PROMPTS / "consolidation_answer.schema.json"
JUDGE_MARKER = "# Memory consolidation judge"
TEMPERATURE = 0.2


class ClusterFailed(ValueError):
    """The judge's answer for a cluster was unusable: the cluster is skipped, the pass goes on."""


@dataclass(frozen=True)
class Proposed:
    op: str
    ids: tuple[int, ...]  # merge: the members; supersede: (old, new); expire: (one,)
    content: str = ""
    expires: date | None = None


@cache
def prompt() -> str:
    return PROMPT_PATH.read_text(encoding="utf-8").strip()


@cache
def answer_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def render(cluster: Cluster) -> list[dict[str, str]]:
    lines = []
    for item in cluster.items:
        note = f" (key: {item.key})" if item.key else ""
        text = " ".join(item.content.split())
        lines.append(f"[{item.id}] ({item.created_at.astimezone(UTC).date().isoformat()}) {text}{note}")
    return [{"role": "system", "content": prompt()}, {"role": "user", "content": "Memories:\n" + "\n".join(lines)}]


def _int(value: Any, allowed: set[int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise ClusterFailed(f"not an id of this cluster: {value!r}")
    return value


def _one(raw: Any, allowed: set[int]) -> Proposed:
    if not isinstance(raw, dict):
        raise ClusterFailed("a proposal is not an object")
    op = raw.get("op")
    if op == "merge":
        ids = raw.get("ids")
        content = raw.get("content")
        if not isinstance(ids, list) or len(set(ids)) < 2 or len(set(ids)) != len(ids):
            raise ClusterFailed("a merge needs two or more distinct ids")
        if not isinstance(content, str) or not content.strip() or len(content.strip()) > CONTENT_MAX:
            raise ClusterFailed("a merge needs a sentence of at most 500 characters")
        return Proposed("merge", tuple(sorted(_int(i, allowed) for i in ids)), content=" ".join(content.split()))
    if op == "supersede":
        old, new = _int(raw.get("id"), allowed), _int(raw.get("by"), allowed)
        if old == new:
            raise ClusterFailed("a memory cannot supersede itself")
        return Proposed("supersede", (old, new))
    if op == "expire":
        one = _int(raw.get("id"), allowed)
        try:
            expires = date.fromisoformat(str(raw.get("expires")))
        except ValueError:
            raise ClusterFailed(f"not a date: {raw.get('expires')!r}") from None
        return Proposed("expire", (one,), expires=expires)
    raise ClusterFailed(f"unknown op: {op!r}")


def parse(raw: str, cluster: Cluster) -> list[Proposed]:
    """The proposals of a judge's answer for `cluster`; raises ClusterFailed when any part is malformed."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        raise ClusterFailed("the answer is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("proposals"), list):
        raise ClusterFailed('the answer has no "proposals" list')
    allowed = set(cluster.ids)
    proposed = [_one(p, allowed) for p in data["proposals"]]
    seen: set[int] = set()
    for p in proposed:
        if seen & set(p.ids):
            raise ClusterFailed("a memory is in two proposals")
        seen |= set(p.ids)
    return proposed


def ask(messages: list[dict[str, str]], *, chat_model: ChatModel | None = None) -> str:
    """The judge's raw answer, asked in the provider's queue as background work. Raises LLMError."""
    chat_model = chat_model or get_chat_model()
    timeout = float(settings.MEMORY_JUDGE_TIMEOUT)
    max_tokens = int(settings.MEMORY_JUDGE_MAX_TOKENS)
    with model_queue.slot(
        chat_model,
        lease=timeout + model_queue.LEASE_MARGIN_SECONDS,
        wait=timeout,
        priority=model_queue.Priority.BACKGROUND,
        max_tokens=max_tokens,
        model_name=settings.MEMORY_MODEL,
    ):
        return chat_model.complete_json(
            messages=messages,
            model=settings.MEMORY_MODEL,
            temperature=TEMPERATURE,
            timeout=timeout,
            max_tokens=max_tokens,
            schema=answer_schema(),
        )


def expires_at(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
