"""An import's run in the worker: stream the stored export, land each conversation it does not have yet,
report progress on the import's row as it goes, and finish with a notice.

    import_run(import_id=…)   # from imports.tasks.import_run_task; idempotent

- One conversation at a time is parsed and written in its own transaction; a conversation that cannot be
  read or written is reported in `errors` and skipped, and the rest import.
- Progress is the share of the conversations file read so far, saved on the row at most every
  PROGRESS_SECONDS, so a page that reloads shows where it is.
- Running twice is harmless: conversations already imported (same product, same original id) are skipped,
  so a run the worker lost is simply run again; an import removed meanwhile stops the run.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from accounts.models import User
from chat.models import Conversation
from imports import notices, preview, projects, reader
from imports.formats import Unreadable
from imports.landing import conversation_land
from imports.models import ChatImport

logger = logging.getLogger(__name__)

PROGRESS_SECONDS = 1.0
ERRORS_KEPT = 200

Status = ChatImport.Status


def import_run(*, import_id: int) -> str:
    started = ChatImport.objects.filter(pk=import_id, status__in=[Status.QUEUED, Status.RUNNING]).update(
        status=Status.RUNNING, started_at=timezone.now()
    )
    row = ChatImport.objects.filter(pk=import_id).select_related("owner").first()
    if not started or row is None:
        return "nothing to do"
    try:
        _run(row)
    except reader.Rejected as exc:  # the file changed or broke after its check: stop, keep what landed
        _finish(row, Status.FAILED, error=str(exc))
        return Status.FAILED
    _finish(row, Status.DONE)
    return Status.DONE


class _Progress:
    def __init__(self, row: ChatImport, size: int) -> None:
        self.row, self.size, self.saved_at = row, max(size, 1), 0.0

    def save(self, read: int, *, force: bool = False) -> bool:
        """Record the counts; False when the import was removed meanwhile."""
        now = time.monotonic()
        if not force and now - self.saved_at < PROGRESS_SECONDS:
            return True
        self.saved_at = now
        row = self.row
        row.progress = min(0.99, read / self.size)
        return bool(
            ChatImport.objects.filter(pk=row.pk).update(
                progress=row.progress,
                conversations=row.conversations,
                messages=row.messages,
                skipped=row.skipped,
                errors=row.errors,
            )
        )


def _run(row: ChatImport) -> None:
    export = reader.open_export(Path(row.stored_file))
    user: User = row.owner
    have = set(Conversation.objects.filter(owner=user, imported_from=row.source).values_list("imported_id", flat=True))
    names = preview.project_names(export, row.source)
    places = projects.Places(user=user, chat_import=row, names=names)
    progress = _Progress(row, export.size)
    row.conversations = row.messages = row.skipped = 0
    row.errors = []
    for item, stream in preview.conversations(export):
        _one(row, item, have=have, places=places)
        if not progress.save(stream.count):
            logger.info("import %s was removed while it ran; stopping", row.pk)
            return
    progress.save(export.size, force=True)


def _one(row: ChatImport, item: Any, *, have: set[str], places: projects.Places) -> None:
    try:
        chat = preview.parse(item, row.source)
    except Unreadable as exc:
        key, title = preview.describe(item)
        _skip(row, key, title, str(exc))
        return
    if chat.source_id in have:
        row.skipped += 1  # already imported (an earlier import of the same export)
        return
    try:
        conversation_land(user=row.owner, chat_import=row, chat=chat, project=places.project_for(chat.project_key))
    except (DatabaseError, ValueError) as exc:
        logger.warning("import %s: conversation %s could not be written (%s)", row.pk, chat.source_id, exc)
        _skip(row, chat.source_id, chat.title, f"could not be written ({exc.__class__.__name__})")
        return
    have.add(chat.source_id)
    row.conversations += 1
    row.messages += len(chat.turns)


def _skip(row: ChatImport, key: str, title: str, reason: str) -> None:
    row.skipped += 1
    if len(row.errors) < ERRORS_KEPT:
        row.errors.append({"id": key, "title": title, "reason": reason})


def _finish(row: ChatImport, status: str, *, error: str = "") -> None:
    if error:
        row.errors.append({"id": "", "title": "", "reason": error})
    with transaction.atomic():
        updated = ChatImport.objects.filter(pk=row.pk).update(
            status=status,
            progress=1.0 if status == Status.DONE else row.progress,
            conversations=row.conversations,
            messages=row.messages,
            skipped=row.skipped,
            errors=row.errors,
            finished_at=timezone.now(),
            stored_file="",
        )
    file_remove(row.stored_file)
    if updated:
        notices.import_finished(chat_import_id=row.pk)


def file_remove(path: str) -> None:
    if path:
        Path(path).unlink(missing_ok=True)
