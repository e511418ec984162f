"""Writes the user makes to their own memories (API and settings page).

User control wins over the past: an edit, a deletion or "forget everything" marks the user's
messages sent before it that are still pending as `skipped`, so an old backlog never re-creates a
deleted fact or overrides a correction. Adding or restoring a memory contradicts nothing the user
said, so it leaves unreviewed messages pending (SPEC §4 lists only edits, deletions and clears).
The skip comes first in each transaction: like the extraction commit, which marks its messages
before touching memories, it locks messages before memories, so the two never deadlock on
PostgreSQL; and an extraction committing meanwhile makes the user's write wait, then see it.

A memory row's content is never changed in place: an edit invalidates the old row and inserts a
new version.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import User
from chat.models import Message
from memory.judge import is_storable
from memory.models import CONTENT_MAX, Memory, MemorySource
from memory.selectors import memories_active, messages_pending


class MemoryRejected(Exception):
    """A write that cannot be done; nothing was written. `status` is the HTTP status to answer."""

    status = 400


class MemoryConflict(MemoryRejected):
    status = 409


class MemoryLimitReached(MemoryConflict):
    def __init__(self, limit: int) -> None:
        super().__init__(
            f"You have reached the limit of {limit:,} active memories. Delete ones you no longer need to add more."
        )


def _now() -> datetime:
    """The current time; a seam for tests."""
    return timezone.now()


def memory_content_clean(content: object) -> str:
    """One line of at most CONTENT_MAX characters; raises MemoryRejected saying what is wrong."""
    if not isinstance(content, str):
        raise MemoryRejected(_("Memory content must be a string."))
    if "\x00" in content:  # PostgreSQL cannot store it
        raise MemoryRejected(_("Memory content contains a NUL character (\\u0000), which is not allowed."))
    if not is_storable(content):
        raise MemoryRejected(
            _("Memory content contains a lone UTF-16 surrogate (like \\ud800), which is not valid text.")
        )
    text = " ".join(content.split())
    if not text:
        raise MemoryRejected(_("Memory content is empty."))
    if len(text) > CONTENT_MAX:
        raise MemoryRejected(
            _("Memory content is too long: %(length)s characters; the limit is %(limit)d.")
            % {"length": number_format(len(text), force_grouping=True), "limit": CONTENT_MAX}
        )
    return text


def pending_messages_skip(*, user: User, before: datetime) -> int:
    """Mark the user's still-pending messages sent up to `before` as skipped."""
    pending = messages_pending(user_id=user.pk).filter(created_at__lte=before)
    return pending.update(memory_status=Message.MemoryStatus.SKIPPED)


DUPLICATE = gettext_lazy("An active memory already says exactly this.")


def _ensure_not_duplicate(*, user: User, content: str) -> None:
    if memories_active(user_id=user.pk).filter(content=content).exists():
        raise MemoryConflict(DUPLICATE)


def _create_active(**fields: object) -> Memory:
    """Insert an active memory; the database's unique constraint on the active set (owner, content)
    turns a concurrent duplicate into a 409 rather than a second copy."""
    try:
        with transaction.atomic():
            return Memory.objects.create(**fields)
    except IntegrityError:
        raise MemoryConflict(DUPLICATE) from None


def _lock_user(user: User) -> None:
    """Serialise one user's memory writes (a no-op on SQLite, whose writers queue anyway)."""
    list(User.objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))


def _ensure_room(*, user: User) -> None:
    limit = settings.MEMORY_MAX_ACTIVE
    if memories_active(user_id=user.pk).count() >= limit:
        raise MemoryLimitReached(limit)


def _copy_sources(*, source: Memory, target: Memory) -> None:
    ids = MemorySource.objects.filter(memory=source).values_list("message_id", flat=True)
    MemorySource.objects.bulk_create([MemorySource(memory=target, message_id=mid) for mid in ids])


def _check_owner(user: User, memory: Memory) -> None:
    # Callers fetch through memory_get_for_user; this guards against a future caller that does not.
    if memory.owner_id != user.pk:
        raise Http404("No Memory matches the given query.")


@transaction.atomic
def memory_add(*, user: User, content: str) -> Memory:
    text = memory_content_clean(content)
    _lock_user(user)
    _ensure_not_duplicate(user=user, content=text)
    _ensure_room(user=user)
    return _create_active(owner=user, content=text, origin=Memory.Origin.USER)


@transaction.atomic
def memory_edit(*, user: User, memory: Memory, content: str) -> Memory:
    """Replace an active memory with a corrected version; returns the new version."""
    _check_owner(user, memory)
    text = memory_content_clean(content)
    if text == memory.content and memory.invalid_at is None:
        return memory  # nothing to change, so nothing to skip either
    now = _now()
    pending_messages_skip(user=user, before=now)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    if current.invalid_at is not None:
        raise MemoryConflict(_("Only active memories can be edited; restore this one first."))
    if text == current.content:
        return current
    _ensure_not_duplicate(user=user, content=text)
    new = _create_active(owner=user, content=text, origin=Memory.Origin.USER)
    _copy_sources(source=current, target=new)
    Memory.objects.filter(pk=current.pk).update(
        invalid_at=now, invalid_reason=Memory.InvalidReason.EDITED, superseded_by=new
    )
    return new


def _chain_before(*, user: User, memory: Memory) -> set[int]:
    """The memory and every earlier version of it (one query per version step)."""
    ids, frontier = {memory.pk}, [memory.pk]
    while frontier:
        frontier = list(
            Memory.objects.filter(owner=user, superseded_by_id__in=frontier)
            .exclude(pk__in=ids)
            .values_list("pk", flat=True)
        )
        ids.update(frontier)
    return ids


@transaction.atomic
def memory_delete(*, user: User, memory: Memory) -> int:
    """Remove the memory and its earlier versions permanently; returns how many rows went."""
    _check_owner(user, memory)
    pending_messages_skip(user=user, before=_now())
    ids = _chain_before(user=user, memory=memory)
    deleted, _ = Memory.objects.filter(owner=user, pk__in=ids).delete()
    return len(ids) if deleted else 0


def _chain_head(*, user: User, memory: Memory) -> Memory:
    head = memory
    while head.superseded_by_id is not None:
        head = Memory.objects.select_for_update().get(owner=user, pk=head.superseded_by_id)
    return head


@transaction.atomic
def memory_restore(*, user: User, memory: Memory) -> Memory:
    """Make an invalidated memory active again, as a new version at the end of its chain.

    The chain's last row leads to the new version (`superseded_by`), so a chain has at most one
    active version and later restores find it. If that last row is active it is replaced; if it was
    forgotten (retracted or cleared) it keeps its reason, and the page says it was restored later.
    Pending messages are left alone: restoring contradicts nothing the user said since.
    """
    _check_owner(user, memory)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    if current.invalid_at is None:
        raise MemoryConflict(_("This memory is already active."))
    head = _chain_head(user=user, memory=current)
    same = memories_active(user_id=user.pk).filter(content=current.content).exclude(pk=head.pk)
    if same.exists():
        raise MemoryConflict(DUPLICATE)
    if head.invalid_at is None:
        # Replaced first, so the new version never sits beside it in the active set (one row per content).
        Memory.objects.filter(pk=head.pk).update(invalid_at=_now(), invalid_reason=Memory.InvalidReason.REPLACED)
    else:
        _ensure_room(user=user)
    new = _create_active(owner=user, content=current.content, origin=Memory.Origin.RESTORED)
    _copy_sources(source=current, target=new)
    Memory.objects.filter(pk=head.pk).update(superseded_by=new)
    return new


@transaction.atomic
def memory_forget_all(*, user: User, purge: bool = False) -> int:
    """Forget everything: invalidate every active memory (kept in history), or with `purge`
    delete every memory of the user permanently. Returns how many memories were affected."""
    now = _now()
    pending_messages_skip(user=user, before=now)
    if purge:
        count = Memory.objects.filter(owner=user).count()
        Memory.objects.filter(owner=user).delete()
    else:
        count = memories_active(user_id=user.pk).update(invalid_at=now, invalid_reason=Memory.InvalidReason.CLEARED)
    return count
