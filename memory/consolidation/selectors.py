"""Reads for the tidy-up: the proposals as the API and Settings → Memory show them (before and after)."""

from __future__ import annotations

from typing import Any

from accounts.models import User
from memory.models import ConsolidationProposal, Memory, MemorySource


def proposals_shown(*, user: User, status: str = "", ids: list[int] | None = None) -> list[dict[str, Any]]:
    """The user's proposals, newest first, each with the memories it is about and their sources: three
    queries whatever their number."""
    rows = ConsolidationProposal.objects.filter(owner=user)
    if status:
        rows = rows.filter(status=status)
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    proposals = list(rows)
    wanted = {i for p in proposals for i in [*p.member_ids, *([p.by_id] if p.by_id else [])]}
    memories = {m.pk: m for m in Memory.objects.filter(owner=user, pk__in=wanted)}
    sources: dict[int, list[int]] = {}
    for memory_id, message_id in MemorySource.objects.filter(memory_id__in=wanted).values_list(
        "memory_id", "message_id"
    ):
        sources.setdefault(memory_id, []).append(message_id)
    shown = []
    for p in proposals:
        about = [*p.member_ids, *([p.by_id] if p.by_id else [])]
        before = [
            {"id": m.pk, "content": m.content, "created_at": m.created_at, "sources": sorted(sources.get(m.pk, []))}
            for i in about
            if (m := memories.get(i)) is not None  # a memory deleted for good since is gone from here too
        ]
        shown.append(
            {
                "id": p.pk,
                "op": p.op,
                "status": p.status,
                "project_id": p.project_id,
                "ids": list(p.member_ids),
                "by": p.by_id,
                "content": p.content,
                "expires": p.expires_at,
                "before": before,
                "result_id": p.result_id,
                "created_at": p.created_at,
                "decided_at": p.decided_at,
            }
        )
    return shown
