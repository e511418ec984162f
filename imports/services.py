"""Writes of the imports app: upload (checked, previewed, optionally started), start, remove.

- `import_create` checks the upload before anything is kept (imports.reader, imports.preview): a bad file
  raises `ImportRejected` with its status and a sentence, and leaves no row and no file behind. A good one
  is stored under IMPORT_DIR for the worker and recorded with its preview; without `dry_run` it is queued.
- `import_start` queues a previewed import; the worker runs it (imports.runner).
- `learn_start` / `learn_stop` start and stop "Learn from imported chats" (imports.learning).
- `import_remove` deletes everything the import brought and everything learned from it, with every copy,
  as a permanent delete does: the memories whose sources are its messages (memory.forgetting, through
  memory.services.memory_rows_delete), its conversations (chat.services.conversation_delete, which runs
  the conversation erasers: run records, search index, tool results elsewhere), the projects it created
  that nothing else is in, and its stored file.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import User
from chat.models import Conversation, Message
from chat.services import conversations_erase
from core.tasks import send_task_on_commit
from imports import learning, preview, reader, tasks
from imports.formats import SOURCES
from imports.models import ChatImport, ImportedConversation
from imports.projects import projects_remove
from memory.models import MemorySource
from memory.services import memory_rows_delete

Status = ChatImport.Status


class ImportRejected(Exception):
    """Nothing was written; `status` is the HTTP status to answer."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def source_clean(source: object) -> str | None:
    if source in (None, ""):
        return None
    if source not in SOURCES:
        raise ImportRejected(
            _("Unknown source %(source)r: use chatgpt or claude.") % {"source": str(source)[:40]}, status=422
        )
    return str(source)


def _store(upload: UploadedFile) -> Path:
    folder = Path(settings.IMPORT_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.upload"
    with path.open("wb") as target:
        temporary = getattr(upload, "temporary_file_path", None)
        if temporary is not None:
            with open(temporary(), "rb") as handle:
                shutil.copyfileobj(handle, target, 1024 * 1024)
        else:
            for chunk in upload.chunks():
                target.write(chunk)
    path.chmod(0o600)
    return path


def import_create(*, user: User, upload: UploadedFile, source: object = None, dry_run: bool = False) -> ChatImport:
    wanted = source_clean(source)
    size = upload.size or 0
    if size > reader.max_bytes():
        raise ImportRejected(str(reader.too_big(size)), status=413)
    if size == 0:
        raise ImportRejected(_("The file is empty."))
    return _checked(user=user, path=_store(upload), name=upload.name or "", source=wanted, queue=not dry_run)


def import_create_from_file(*, user: User, path: Path, source: object = None) -> ChatImport:
    """An export on the server's disk (`manage.py import_chats`): checked and stored like an upload, queued
    but not sent to the worker (the caller runs it)."""
    wanted = source_clean(source)
    folder = Path(settings.IMPORT_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{uuid.uuid4().hex}.upload"
    shutil.copyfile(path, stored)
    stored.chmod(0o600)
    return _checked(user=user, path=stored, name=path.name, source=wanted, queue=True, send=False)


def _checked(*, user: User, path: Path, name: str, source: str | None, queue: bool, send: bool = True) -> ChatImport:
    """Check the stored file and record the import with its preview; a refused file is removed."""
    try:
        export = reader.open_export(path)
        found = preview.inspect(export, source=source)
    except reader.Rejected as exc:
        path.unlink(missing_ok=True)
        raise ImportRejected(str(exc), status=exc.status) from exc
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    summary = found.as_dict()
    summary["already_imported"] = _already_imported(user=user, source=found.source, ids=found.source_ids)
    with transaction.atomic():
        row = ChatImport.objects.create(
            owner=user,
            source=found.source,
            status=Status.QUEUED if queue else Status.PREVIEWED,
            filename=name[:255],
            size=path.stat().st_size,
            stored_file=str(path),
            preview=summary,
        )
        if queue and send:
            _enqueue(row)
    return row


def _already_imported(*, user: User, source: str, ids: list[str]) -> int:
    have = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        have += Conversation.objects.filter(owner=user, imported_from=source, imported_id__in=chunk).count()
    return have


def _enqueue(row: ChatImport) -> None:
    send_task_on_commit(tasks.import_run_task, args=[row.pk], what=f"import {row.pk}")


@transaction.atomic
def import_start(*, user: User, chat_import: ChatImport) -> ChatImport:
    started = ChatImport.objects.filter(pk=chat_import.pk, owner=user, status=Status.PREVIEWED).update(
        status=Status.QUEUED
    )
    if not started:
        raise ImportRejected(
            _("Only a previewed import can be started; this one is %(status)s.")
            % {"status": chat_import.get_status_display()},
            status=409,
        )
    chat_import.refresh_from_db()
    _enqueue(chat_import)
    return chat_import


def learned_memory_ids(*, chat_import: ChatImport) -> list[int]:
    """Memories drawn from the import's messages (kept, suggested or in history), every version."""
    conversations = ImportedConversation.objects.filter(chat_import=chat_import).values("conversation_id")
    messages = Message.objects.filter(conversation_id__in=conversations, user_id=chat_import.owner_id)
    return sorted(set(MemorySource.objects.filter(message__in=messages).values_list("memory_id", flat=True)))


@transaction.atomic
def import_remove(*, user: User, chat_import: ChatImport) -> dict[str, Any]:
    """Remove the import and everything it brought and learned; returns what went."""
    row = ChatImport.objects.select_for_update().filter(pk=chat_import.pk, owner=user).first()
    if row is None:
        return {"conversations": 0, "memories": 0}
    memory_ids = learned_memory_ids(chat_import=row)
    if memory_ids:
        memory_rows_delete(memory_ids=memory_ids)
    ids = list(ImportedConversation.objects.filter(chat_import=row).values_list("conversation_id", flat=True))
    conversations_erase(user_id=user.pk, conversation_ids=ids)
    Conversation.objects.filter(owner=user, pk__in=ids).delete()
    projects = projects_remove(chat_import=row)
    stored = row.stored_file
    row.delete()
    transaction.on_commit(lambda: Path(stored).unlink(missing_ok=True) if stored else None)
    return {"conversations": len(ids), "memories": len(memory_ids), "projects": projects}


@transaction.atomic
def learn_start(*, user: User, chat_import: ChatImport) -> ChatImport:
    row = ChatImport.objects.select_for_update().get(pk=chat_import.pk, owner=user)
    if row.status != ChatImport.Status.DONE:
        raise ImportRejected(_("Learning can start once the import is done."), status=409)
    if not user.memory_enabled:
        raise ImportRejected(_("Memory is switched off: switch it on to learn from imported chats."), status=409)
    if row.learn_status in (ChatImport.LearnStatus.QUEUED, ChatImport.LearnStatus.RUNNING):
        return row
    row.learn_status = ChatImport.LearnStatus.QUEUED
    row.learn_total = learning.user_messages(chat_import=row).count()
    row.learn_stop = False
    row.learn_error = ""
    if row.learn_cursor is None:
        row.learn_done = 0
    row.save(update_fields=["learn_status", "learn_total", "learn_stop", "learn_error", "learn_done"])
    send_task_on_commit(tasks.learn_task, args=[row.pk], what=f"learning from import {row.pk}")
    return row


@transaction.atomic
def learn_stop(*, user: User, chat_import: ChatImport) -> ChatImport:
    ChatImport.objects.filter(
        pk=chat_import.pk, owner=user, learn_status__in=[ChatImport.LearnStatus.QUEUED, ChatImport.LearnStatus.RUNNING]
    ).update(learn_stop=True)
    ChatImport.objects.filter(pk=chat_import.pk, owner=user, learn_status=ChatImport.LearnStatus.QUEUED).update(
        learn_status=ChatImport.LearnStatus.STOPPED
    )
    chat_import.refresh_from_db()
    return chat_import
