"""Candidate clusters: per user and per scope, the active memories that may belong together.

Two memories are linked when their embeddings are close (the vectors recall uses, when embeddings run),
when they hold the same key, or when they share most of their terms (chat.terms, so Chinese works too).
Linked memories form clusters (union-find); a cluster is capped at CLUSTER_MAX so the judge only ever
sees a few memories, never the whole store. Scopes never mix: the user's own memories are one pool and
each project's are another, so an isolated project's memories are consolidated only among themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chat.terms import terms
from memory import embeddings
from memory.models import Memory

CLUSTER_MAX = 6
# Cosine similarity of normalised embeddings above which two memories are candidates.
VECTOR_LINK = 0.86
# Share of the smaller memory's terms the two must have in common.
TERMS_LINK = 0.6


@dataclass(frozen=True)
class Item:
    id: int
    content: str
    created_at: datetime
    key: str = ""
    pinned: bool = False


@dataclass(frozen=True)
class Cluster:
    project_id: int | None
    items: tuple[Item, ...]

    @property
    def ids(self) -> list[int]:
        return [i.id for i in self.items]


def _terms(text: str) -> set[str]:
    return set(terms(text))


def _linked(
    a: Item, b: Item, ta: set[str], tb: set[str], va: Sequence[float] | None, vb: Sequence[float] | None
) -> bool:
    if a.key and a.key == b.key:
        return True
    if va is not None and vb is not None and sum(x * y for x, y in zip(va, vb, strict=False)) >= VECTOR_LINK:
        return True
    small = min(len(ta), len(tb))
    return small > 0 and len(ta & tb) / small >= TERMS_LINK


def clusters_of(items: Sequence[Item], *, vectors: dict[int, Sequence[float]], project_id: int | None) -> list[Cluster]:
    """Clusters of two or more of these memories (one scope's), each at most CLUSTER_MAX, oldest first."""
    items = sorted(items, key=lambda i: (i.created_at, i.id))
    parent = list(range(len(items)))
    size = [1] * len(items)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    words = [_terms(i.content) for i in items]
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            ra, rb = root(a), root(b)
            if ra == rb or size[ra] + size[rb] > CLUSTER_MAX:
                continue
            if _linked(items[a], items[b], words[a], words[b], vectors.get(items[a].id), vectors.get(items[b].id)):
                parent[rb] = ra
                size[ra] += size[rb]
    groups: dict[int, list[Item]] = {}
    for index, item in enumerate(items):
        groups.setdefault(root(index), []).append(item)
    return [Cluster(project_id=project_id, items=tuple(g)) for g in groups.values() if len(g) > 1]


def user_clusters(*, user_id: int) -> list[Cluster]:
    """Every candidate cluster of the user's active memories, scope by scope."""
    rows = Memory.objects.filter(owner_id=user_id, invalid_at__isnull=True, suggested=False).order_by(
        "created_at", "id"
    )
    scopes: dict[int | None, list[Item]] = {}
    for m in rows.only("id", "content", "created_at", "key", "pinned", "project_id"):
        item = Item(id=m.pk, content=m.content, created_at=m.created_at, key=m.key, pinned=m.pinned)
        scopes.setdefault(m.project_id, []).append(item)
    vectors = embeddings.vectors_of_user(user_id=user_id, memory_ids=[i.id for s in scopes.values() for i in s])
    found: list[Cluster] = []
    for project_id, items in scopes.items():
        found.extend(clusters_of(items, vectors=vectors, project_id=project_id))
    return found
