"""A message the user edited (chat.edits): what was learned from it alone is no longer what they said.

A memory whose only source was the old message moves to History with the reason "source edited" (it can
be restored from there); a memory with other sources keeps them and only loses the link. The new words
are pending like any new message, so whatever they say is learned again.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from memory.models import Memory


def memories_source_edited(*, user_id: int, message_id: int) -> int:
    """Invalidate the user's memories (active or suggested) drawn from `message_id` alone; how many."""
    drawn = Memory.objects.filter(owner_id=user_id, invalid_at__isnull=True, source_links__message_id=message_id)
    # Counted apart from the filter above, which would count only the link to this message.
    only_this = (
        Memory.objects.filter(pk__in=drawn.values("pk"))
        .annotate(source_count=Count("source_links"))
        .filter(source_count=1)
        .values_list("pk", flat=True)
    )
    ids = list(only_this)
    if not ids:
        return 0
    return Memory.objects.filter(Q(pk__in=ids), invalid_at__isnull=True).update(
        invalid_at=timezone.now(), invalid_reason=Memory.InvalidReason.SOURCE_EDITED
    )


def on_user_message_edited(sender: object, *, user_id: int, message_id: int, **kwargs: Any) -> None:
    """chat.extensions.user_message_edited receiver (inside the edit's transaction)."""
    memories_source_edited(user_id=user_id, message_id=message_id)
