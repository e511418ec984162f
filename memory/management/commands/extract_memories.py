"""`python manage.py extract_memories USERNAME`: run the extraction pipeline for one user now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from memory.extraction import batches, outcomes
from memory.models import ExtractionRun


class Command(BaseCommand):
    help = "Extract memories from all of a user's pending messages now (no threshold), in this process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        trigger = ExtractionRun.Trigger.MANUAL
        result = batches.extract(user_id=user.pk, trigger=trigger, up_to_message_id=None)
        changes = f"added {result.added}, updated {result.updated}, retracted {result.retracted}"
        if result.cleared:
            changes += ", cleared everything"
        self.stdout.write(f"{result.status}: {result.batches} batch(es) judged; {changes}.")
        for change in result.changes:
            self.stdout.write(f"  {change.sentence().rstrip('.')}.")
        if result.run_ids:
            self.stdout.write(f"Extraction runs (see admin): {', '.join(map(str, result.run_ids))}")
        if result.status in (outcomes.Outcome.FAILED, outcomes.Outcome.DROPPED, outcomes.Outcome.UNAVAILABLE):
            raise CommandError(result.error or "Extraction failed.")
