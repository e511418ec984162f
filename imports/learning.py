""" "Learn from imported chats": the judge reads the import's user messages in the background, oldest first,
in batches that fit its window (memory.extraction.learn), and everything it would add waits as a suggestion
that cites the imported message. The import's row holds the pass's state: status, how many messages are
done of how many, how many suggestions it made, and a cursor (the last message judged), so a stopped or
interrupted pass goes on where it was.

    learn_estimate(chat_import=…)          # what it would cost: messages, judge calls, characters
    learn_step(import_id=…)                # one batch (imports.tasks.learn_task runs them)

Starting and stopping a pass are services (imports.services.learn_start, learn_stop).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import Length
from django.utils.dateparse import parse_datetime

from chat.models import Message
from imports.models import ChatImport, ImportedConversation
from memory.extraction import batching, judge
from memory.extraction.learn import learn
from memory.extraction.outcomes import Outcome
from memory.extraction.reads import BATCH_SIZE

Learn = ChatImport.LearnStatus
# A rough characters-per-token for the estimate (chat.llm.tokens counts precisely when it runs).
CHARS_PER_TOKEN = 3


def user_messages(*, chat_import: ChatImport) -> QuerySet[Message]:
    conversations = ImportedConversation.objects.filter(chat_import=chat_import).values("conversation_id")
    return Message.objects.filter(
        conversation_id__in=conversations, user_id=chat_import.owner_id, role=Message.Role.USER
    ).order_by("created_at", "id")


def learn_estimate(*, chat_import: ChatImport) -> dict[str, int]:
    rows = user_messages(chat_import=chat_import)
    messages = rows.count()
    characters = rows.aggregate(total=Sum(Length("content")))["total"] or 0
    budget = max(1, batching.request_budget(BATCH_SIZE) - 1500)  # the prompt and memories take their part
    calls = max(math.ceil(messages / BATCH_SIZE), math.ceil(characters / CHARS_PER_TOKEN / budget)) if messages else 0
    return {"messages": messages, "judge_calls": calls, "characters": characters}


def _after(cursor: Any) -> Q:
    if not cursor:
        return Q()
    moment: datetime | None = parse_datetime(cursor[0])
    return Q(created_at__gt=moment) | Q(created_at=moment, id__gt=cursor[1])


def learn_step(*, import_id: int, attempt: int = 1) -> Outcome | str:
    """Judge the next batch. Returns "done", "stopped", "gone", or the pipeline's outcome (APPLIED: go on)."""
    row = ChatImport.objects.filter(pk=import_id).select_related("owner").first()
    if row is None:
        return "gone"
    if row.learn_stop or not row.owner.memory_enabled:
        ChatImport.objects.filter(pk=row.pk).update(learn_status=Learn.STOPPED)
        return "stopped"
    rows = list(
        user_messages(chat_import=row)
        .filter(_after(row.learn_cursor))
        .values_list("id", "conversation_id", "content", "created_at")[:BATCH_SIZE]
    )
    if not rows:
        ChatImport.objects.filter(pk=row.pk).update(learn_status=Learn.DONE, learn_done=row.learn_total)
        return "done"
    ChatImport.objects.filter(pk=row.pk).update(learn_status=Learn.RUNNING)
    result, covered = learn(user_id=row.owner_id, messages=[judge.PendingMessage(*r) for r in rows], attempt=attempt)
    if covered:
        last = rows[covered - 1]
        suggested = sum(1 for c in result.changes if c.kind == "add")
        ChatImport.objects.filter(pk=row.pk).update(
            learn_cursor=[last[3].isoformat(), last[0]],
            learn_done=row.learn_done + covered,
            learn_suggested=row.learn_suggested + suggested,
        )
    return result.status


def learn_failed(*, import_id: int) -> None:
    ChatImport.objects.filter(pk=import_id).update(
        learn_status=Learn.FAILED, learn_error="The judge failed repeatedly; start again to retry."
    )
