"""Memory's part of an account's data (accounts.data, registered in memory/apps.py): the export's
"memories" section, the account eraser, the conversation eraser (run records that quoted a deleted
conversation's messages) and what Settings → Account says about retention."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Prefetch
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import User
from chat.extensions import ConversationsErased
from chat.models import Message
from memory import forgetting
from memory.models import ExtractionRun, Memory, MemoryClaim
from memory.selectors import source_excerpt

EXPORT_CHUNK = 500


def memory_status(memory: Memory) -> str:
    """active | suggested | expired | invalid, as the API names them."""
    if memory.invalid_at is not None:
        return "invalid"
    if memory.suggested:
        return "suggested"
    if memory.expires_at is not None and memory.expires_at <= timezone.now():
        return "expired"
    return "active"


def memories_export(user: User) -> Iterator[dict[str, Any]]:
    """Every memory of the user (active, suggested and in history), oldest first, with its versions'
    links, this release's fields and its sources; read in chunks."""
    sources = Message.objects.only("id", "conversation_id", "content").order_by("id")
    rows = (
        Memory.objects.filter(owner=user)
        .select_related("supersedes")
        .prefetch_related(Prefetch("sources", queryset=sources))
        .order_by("created_at", "id")
    )
    for memory in rows.iterator(chunk_size=EXPORT_CHUNK):
        supersedes = getattr(memory, "supersedes", None)
        yield {
            "id": memory.pk,
            "content": memory.content,
            "status": memory_status(memory),
            "origin": memory.origin,
            "created_at": memory.created_at,
            "invalid_at": memory.invalid_at,
            "invalid_reason": memory.invalid_reason,
            "supersedes": supersedes.pk if supersedes is not None else None,
            "superseded_by": memory.superseded_by_id,
            "pinned": memory.pinned,
            "key": memory.key,
            "sensitive": memory.sensitive,
            "suggested": memory.suggested,
            "expires_at": memory.expires_at,
            "last_used_at": memory.last_used_at,
            "project_id": memory.project_id,
            "sources": [
                {"message_id": m.pk, "conversation_id": m.conversation_id, "excerpt": source_excerpt(m)}
                for m in memory.sources.all()
            ],
        }


def account_erase(user: User) -> None:
    """Every memory of the user, through forgetting's redactors (copies outside the user's own rows),
    then the memories, runs and claim themselves."""
    ids = list(Memory.objects.filter(owner=user).values_list("pk", flat=True))
    forgetting.memories_forget(user_id=user.pk, memory_ids=ids)
    Memory.objects.filter(owner=user).delete()
    ExtractionRun.objects.filter(owner=user).delete()
    MemoryClaim.objects.filter(user=user).delete()


def runs_messages_erase(erased: ConversationsErased) -> None:
    """Run records that covered a deleted conversation's messages lose their text: the numbered lines
    by message id, any quote of them by text. Counts, status and timings stay."""
    gone = set(erased.messages)
    if not gone:
        return
    rows = ExtractionRun.objects.select_for_update().filter(owner_id=erased.user_id)
    for run in rows.only("pk", "message_ids", *forgetting.RUN_TEXT_FIELDS).iterator(chunk_size=200):
        covered = gone.intersection(int(pk) for pk in run.message_ids or [])
        if not covered:
            continue
        changed = forgetting.run_messages_redact(run, gone=covered, texts=[erased.messages[pk] for pk in covered])
        if changed:
            ExtractionRun.objects.filter(pk=run.pk).update(**{name: getattr(run, name) for name in changed})


def account_page_context(request: HttpRequest) -> dict[str, Any]:
    return {"retention_days": settings.MEMORY_RUN_RETENTION_DAYS}
