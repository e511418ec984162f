"""The imports app's part of an account's data (accounts.data, registered in imports/apps.py): the export's
"imports" section (the conversations themselves are in "conversations", with `imported_from` and
`imported_id`), and the eraser that removes stored uploads with the account."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import transaction

from accounts.models import User
from imports.models import ChatImport, ImportedConversation
from imports.schemas import import_out


def imports_export(user: User) -> Iterator[dict[str, Any]]:
    for row in ChatImport.objects.filter(owner=user).order_by("created_at", "pk").iterator(chunk_size=200):
        ids = ImportedConversation.objects.filter(chat_import=row).values_list("conversation_id", flat=True)
        yield {**import_out(row), "conversation_ids": [str(pk) for pk in ids]}


def account_erase(user: User) -> None:
    """Rows go with the user (CASCADE); the uploads waiting on disk go once the deletion commits."""
    files = [f for f in ChatImport.objects.filter(owner=user).values_list("stored_file", flat=True) if f]
    transaction.on_commit(lambda: _unlink(files))


def _unlink(files: list[str]) -> None:
    for name in files:
        Path(name).unlink(missing_ok=True)
