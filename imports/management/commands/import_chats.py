"""`manage.py import_chats USERNAME FILE [--source chatgpt|claude]`: import an export for a user, here and
now (the same check, preview and run as an upload, without the worker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from imports import runner
from imports.formats import SOURCES
from imports.models import ChatImport
from imports.services import ImportRejected, import_create_from_file


class Command(BaseCommand):
    help = "Import a ChatGPT or Claude data export (the ZIP or its conversations.json) into a user's account."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--source", choices=SOURCES, help="The product that wrote the export (found from the file when left out)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user named {options['username']!r}.")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            row = import_create_from_file(user=user, path=path, source=options["source"])
        except ImportRejected as exc:
            raise CommandError(str(exc)) from exc
        found = row.preview
        self.stdout.write(
            f"{row.get_source_display()} export: {found['conversations']} conversations, {found['messages']} messages, "
            f"{found['skipped_count']} unreadable, {found['already_imported']} already imported."
        )
        runner.import_run(import_id=row.pk)
        row = ChatImport.objects.get(pk=row.pk)
        for error in row.errors:
            self.stdout.write(f"skipped {error['id'] or '?'} ({error['title']}): {error['reason']}")
        self.stdout.write(
            f"Import {row.pk} {row.status}: {row.conversations} conversations and {row.messages} messages imported, "
            f"{row.skipped} skipped."
        )
        if row.status != ChatImport.Status.DONE:
            raise CommandError(f"Import {row.pk} failed.")
