"""What the "Memory updated" notices and the conversation's memory markers read (memory.notices): the
runs that changed memories, what they wrote, and the markers already shown."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import User
from chat.models import ConversationMarker, Message
from memory.changes import MARKER_KIND
from memory.models import ExtractionRun, Memory
from memory.selectors import memory_suggestions_of_runs


def _changed_runs(*, user: User) -> QuerySet[ExtractionRun]:
    # Only an applied run with at least one applied operation changed memories (memory.extraction.commit).
    return ExtractionRun.objects.filter(owner=user, status=ExtractionRun.Status.APPLIED).exclude(applied_ops=[])


def extraction_runs_changed_after(*, user: User, after_run_id: int, limit: int = 5) -> list[ExtractionRun]:
    """The user's runs that changed memories, with an id above `after_run_id`, oldest first."""
    return list(_changed_runs(user=user).filter(pk__gt=after_run_id).order_by("pk")[:limit])


def extraction_run_last_changed_id(*, user: User) -> int:
    """The id of the user's latest run that changed memories (0 when there is none)."""
    return _changed_runs(user=user).order_by("-pk").values_list("pk", flat=True).first() or 0


def memory_contents_by_id(*, user: User, ids: list[int]) -> dict[int, str]:
    """The content of some of the user's memories (e.g. the ones a run retracted), by id."""
    if not ids:
        return {}
    return dict(Memory.objects.filter(owner=user, pk__in=ids).values_list("pk", "content"))


def memory_ids_written_by_runs(*, run_ids: list[int]) -> dict[int, list[int]]:
    """Every memory each run wrote that is still active or waiting, oldest first, by run id (one query)."""
    rows = Memory.objects.filter(run_id__in=run_ids, invalid_at__isnull=True).order_by("id").values_list("run_id", "pk")
    written: dict[int, list[int]] = {}
    for run_id, pk in rows:
        if run_id is not None:
            written.setdefault(run_id, []).append(pk)
    return written


def memory_suggestions_by_run(*, run_ids: list[int]) -> dict[int, list[Memory]]:
    """The suggestions each run made that still wait for the user, with the version each would replace."""
    rows = memory_suggestions_of_runs(run_ids=run_ids)
    found: dict[int, list[Memory]] = {}
    for memory in rows:
        if memory.run_id is not None:
            found.setdefault(memory.run_id, []).append(memory)
    return found


def extraction_run_applied_ops(*, run_id: int) -> ExtractionRun | None:
    """The run with only what it applied loaded (for its Review link), or None."""
    return ExtractionRun.objects.filter(pk=run_id).only("applied_ops").first()


def extraction_run_of_user(*, user_id: int, run_id: int) -> ExtractionRun | None:
    return ExtractionRun.objects.filter(pk=run_id, owner_id=user_id).first()


def message_of_user(*, user_id: int, message_id: int) -> Message | None:
    """The user's message with its conversation (and its user, for the language setting), or None when the
    conversation was deleted meanwhile."""
    return Message.objects.filter(pk=message_id, user_id=user_id).select_related("conversation", "user").first()


def memory_markers_after(*, user: User, conversation_id: str, after_marker_id: int) -> list[ConversationMarker]:
    """The conversation's memory markers newer than `after_marker_id` (the user's conversation only)."""
    return list(
        ConversationMarker.objects.filter(
            conversation_id=conversation_id,
            conversation__owner=user,
            kind=MARKER_KIND,
            pk__gt=after_marker_id,
        ).order_by("pk")[:20]
    )


def memory_outcome_marked(*, user_id: int, message_id: int) -> bool:
    """Whether the conversation of the user's message has a memory marker since the message was sent
    (the flush tool's outcome, or a change it made)."""
    message = Message.objects.filter(pk=message_id, user_id=user_id).values("conversation_id", "created_at").first()
    if message is None:
        return False
    return ConversationMarker.objects.filter(
        conversation_id=message["conversation_id"], kind=MARKER_KIND, created_at__gte=message["created_at"]
    ).exists()


def memory_marker_last_id(*, conversation_id: str) -> int:
    """The id of the conversation's latest memory marker (0 when there is none)."""
    query = ConversationMarker.objects.filter(conversation_id=conversation_id, kind=MARKER_KIND)
    return query.order_by("-pk").values_list("pk", flat=True).first() or 0


def memory_markers_of_user(*, user_id: int) -> list[ConversationMarker]:
    """The user's memory markers that keep data (memory.notices), newest first."""
    return list(
        ConversationMarker.objects.filter(conversation__owner_id=user_id, kind=MARKER_KIND)
        .exclude(data={})
        .select_related("conversation__owner")
        .order_by("-created_at", "-id")
    )
