"""Writes the user makes to their own memories (API and settings page).

User control wins over the past: an edit, a deletion or "forget everything" marks the user's
messages sent before it that are still pending as `skipped`, so an old backlog never re-creates a
deleted fact or overrides a correction. Adding or restoring a memory contradicts nothing the user
said, so it leaves unreviewed messages pending (SPEC §4 lists only edits, deletions and clears).
The skip comes first in each transaction: like the extraction commit, which marks its messages
before touching memories, it locks messages before memories, so the two never deadlock on
PostgreSQL; and an extraction committing meanwhile makes the user's write wait, then see it.

A memory row's content is never changed in place: an edit invalidates the old row and inserts a
new version. Its pin and end date are settings of the row and change in place (`memory_settings`).

Suggestions (SPEC §8): a learned memory under review waits with `suggested=True`. Keep
(`memory_confirm`) makes it active; a suggested update replaces the version it names
(`superseded_by` of the old row points at the suggestion), and a keyed suggestion replaces whichever
memory holds its key now. Discard is `memory_delete`. A suggestion cannot be edited: keep it first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from accounts.models import User
from chat.models import Message, Project
from memory import forgetting, lifecycle
from memory.extraction.judge.content import is_storable
from memory.models import CONTENT_MAX, Memory, MemorySource
from memory.rejections import DUPLICATE as DUPLICATE
from memory.rejections import NOT_CHANGEABLE
from memory.rejections import MemoryConflict as MemoryConflict
from memory.rejections import MemoryLimitReached as MemoryLimitReached
from memory.rejections import MemoryRejected as MemoryRejected
from memory.selectors import in_scope, memories_active, messages_pending
from memory.tasks import embed_memories_later


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


def _ensure_not_duplicate(*, user: User, content: str, project_id: int | None = None) -> None:
    """An active memory of the same scope says exactly this (a project may hold a sentence the user does)."""
    if memories_active(user_id=user.pk).filter(in_scope(project_id), content=content).exists():
        raise MemoryConflict(DUPLICATE)


def create_active(**fields: object) -> Memory:
    """Insert an active memory; the database's unique constraint on the active set (owner, content)
    turns a concurrent duplicate into a 409 rather than a second copy."""
    try:
        with transaction.atomic():
            return Memory.objects.create(**fields)
    except IntegrityError:
        raise MemoryConflict(DUPLICATE) from None


def _lock_user(user: User) -> None:
    lifecycle.memory_writes_lock(user_id=user.pk, now=_now())


def _ensure_room(*, user: User) -> None:
    limit = settings.MEMORY_MAX_ACTIVE
    if memories_active(user_id=user.pk).count() >= limit:
        raise MemoryLimitReached(limit)


def lock_active(*, user: User, memory: Memory, now: datetime, change: Literal["edit", "move"]) -> Memory:
    """Begin a `change` of an active memory: the user's messages pending before `now` are skipped (their
    word wins over an old backlog), the user row and the memory's row are locked, and the memory must
    still be active and not a suggestion (else the change's NOT_CHANGEABLE reason)."""
    pending_messages_skip(user=user, before=now)
    _lock_user(user)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    inactive, suggested = NOT_CHANGEABLE[change]
    if current.invalid_at is not None:
        raise MemoryConflict(inactive)
    if current.suggested:
        raise MemoryConflict(suggested)
    return current


def copy_sources(*, source: Memory, target: Memory) -> None:
    ids = MemorySource.objects.filter(memory=source).values_list("message_id", flat=True)
    MemorySource.objects.bulk_create([MemorySource(memory=target, message_id=mid) for mid in ids])


def _drop_suggestion_of(*, user: User, content: str, project_id: int | None = None) -> None:
    """A memory the user writes takes the place of a suggestion of the same sentence in its scope."""
    suggestions = Memory.objects.filter(in_scope(project_id), owner=user, suggested=True, invalid_at__isnull=True)
    suggestions.filter(content=content).delete()


def _check_owner(user: User, memory: Memory) -> None:
    # Callers fetch through memory_get_for_user; this guards against a future caller that does not.
    if memory.owner_id != user.pk:
        raise Http404("No Memory matches the given query.")


@transaction.atomic
def memory_add(*, user: User, content: str, project: Project | None = None) -> Memory:
    """A memory the user writes: about them (no project) or about one of their projects."""
    text = memory_content_clean(content)
    project_id = project.pk if project is not None else None
    if project is not None and project.owner_id != user.pk:
        raise Http404("No Project matches the given query.")
    _lock_user(user)
    _ensure_not_duplicate(user=user, content=text, project_id=project_id)
    _ensure_room(user=user)
    embed_memories_later(user_id=user.pk)
    _drop_suggestion_of(user=user, content=text, project_id=project_id)
    return create_active(owner=user, content=text, origin=Memory.Origin.USER, project_id=project_id)


@transaction.atomic
def memory_edit(*, user: User, memory: Memory, content: object) -> Memory:
    """Replace an active memory with a corrected version; returns the new version."""
    _check_owner(user, memory)
    text = memory_content_clean(content)
    if text == memory.content and memory.invalid_at is None:
        return memory  # nothing to change, so nothing to skip either
    now = _now()
    current = lock_active(user=user, memory=memory, now=now, change="edit")
    if text == current.content:
        return current
    _ensure_not_duplicate(user=user, content=text, project_id=current.project_id)
    _drop_suggestion_of(user=user, content=text, project_id=current.project_id)
    # The user's own wording wins over a suggested change of this memory still waiting.
    Memory.objects.filter(owner=user, suggested=True, supersedes=current).delete()
    # The key leaves the old row first: one active row per key.
    Memory.objects.filter(pk=current.pk).update(invalid_at=now, invalid_reason=Memory.InvalidReason.EDITED)
    new = create_active(
        owner=user,
        content=text,
        origin=Memory.Origin.USER,
        key=current.key,
        pinned=current.pinned,
        sensitive=current.sensitive,
        expires_at=current.expires_at,
        project_id=current.project_id,
    )
    copy_sources(source=current, target=new)
    Memory.objects.filter(pk=current.pk).update(
        invalid_at=now, invalid_reason=Memory.InvalidReason.EDITED, superseded_by=new
    )
    embed_memories_later(user_id=user.pk)
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
    """Remove the memory and its earlier versions permanently, with every copy of their text
    (memory.forgetting); returns how many rows went."""
    _check_owner(user, memory)
    pending_messages_skip(user=user, before=_now())
    if memory.suggested and memory.invalid_at is None:
        # Discard: only the suggestion goes (with every copy of its text); the version it would have
        # replaced stays as it is.
        forgetting.memories_forget(user_id=user.pk, memory_ids={memory.pk})
        deleted, _ = Memory.objects.filter(owner=user, pk=memory.pk).delete()
        return 1 if deleted else 0
    ids = _chain_before(user=user, memory=memory)
    # A suggested change of a deleted memory goes with it.
    ids |= set(Memory.objects.filter(owner=user, suggested=True, supersedes__pk__in=ids).values_list("pk", flat=True))
    forgetting.memories_forget(user_id=user.pk, memory_ids=ids)  # every copy of their text, first
    deleted, _ = Memory.objects.filter(owner=user, pk__in=ids).delete()
    return len(ids) if deleted else 0


@transaction.atomic
def memory_retract(*, user: User, memory: Memory) -> Memory:
    """Move an active memory to history as no longer true ("Outdated" under a reply): out of the next
    turn's block, kept and restorable. Returns the row as it is now."""
    _check_owner(user, memory)
    now = _now()
    pending_messages_skip(user=user, before=now)
    retracted = (
        memories_active(user_id=user.pk)
        .filter(pk=memory.pk)
        .update(invalid_at=now, invalid_reason=Memory.InvalidReason.RETRACTED)
    )
    if not retracted:
        raise MemoryConflict(gettext("Only an active memory can be marked outdated."))
    memory.refresh_from_db()
    return memory


def _chain_head(*, user: User, memory: Memory) -> Memory:
    head = memory
    while head.superseded_by_id is not None:
        successor = Memory.objects.select_for_update().get(owner=user, pk=head.superseded_by_id)
        if successor.suggested:  # a suggested change is not a version yet
            break
        head = successor
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
    _lock_user(user)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    if current.invalid_at is None:
        raise MemoryConflict(_("This memory is already active."))
    from memory.consolidation.services import undo_for_memory  # merged or superseded in a tidy-up: undo it

    if undo_for_memory(user=user, memory=current):
        return Memory.objects.get(pk=current.pk)
    head = _chain_head(user=user, memory=current)
    scope = memories_active(user_id=user.pk).filter(in_scope(current.project_id))  # back in the scope it had
    same = scope.filter(content=current.content).exclude(pk=head.pk)
    if same.exists():
        raise MemoryConflict(DUPLICATE)
    if head.invalid_at is None:
        # Replaced first, so the new version never sits beside it in the active set (one row per content).
        Memory.objects.filter(pk=head.pk).update(invalid_at=_now(), invalid_reason=Memory.InvalidReason.REPLACED)
    else:
        _ensure_room(user=user)
    if current.key:
        # A restored value of a single-valued preference replaces the one active now.
        scope.filter(key=current.key).update(invalid_at=_now(), invalid_reason=Memory.InvalidReason.REPLACED)
    _drop_suggestion_of(user=user, content=current.content, project_id=current.project_id)
    new = create_active(
        owner=user,
        content=current.content,
        origin=Memory.Origin.RESTORED,
        key=current.key,
        pinned=current.pinned,
        sensitive=current.sensitive,
        project_id=current.project_id,
    )
    copy_sources(source=current, target=new)
    Memory.objects.filter(pk=head.pk).update(superseded_by=new)
    embed_memories_later(user_id=user.pk)
    return new


@transaction.atomic
def memory_rows_delete(*, memory_ids: list[int]) -> int:
    """Delete these rows (of any users; the admin's delete) with every copy of their text."""
    owners: dict[int, list[int]] = {}
    for pk, owner_id in Memory.objects.filter(pk__in=memory_ids).values_list("pk", "owner_id"):
        owners.setdefault(owner_id, []).append(pk)
    for owner_id, ids in owners.items():
        forgetting.memories_forget(user_id=owner_id, memory_ids=ids)
    deleted, _ = Memory.objects.filter(pk__in=memory_ids).delete()
    return deleted


@transaction.atomic
def memory_forget_all(*, user: User, purge: bool = False) -> int:
    """Forget everything: invalidate every active memory (kept in history), or with `purge`
    delete every memory of the user permanently. Returns how many memories were affected."""
    now = _now()
    pending_messages_skip(user=user, before=now)
    if purge:
        ids = list(Memory.objects.filter(owner=user).values_list("pk", flat=True))
        forgetting.memories_forget(user_id=user.pk, memory_ids=ids)  # every copy of their text, first
        count = len(ids)
        Memory.objects.filter(owner=user).delete()
    else:
        count = memories_active(user_id=user.pk).update(invalid_at=now, invalid_reason=Memory.InvalidReason.CLEARED)
        Memory.objects.filter(owner=user, suggested=True).delete()
    return count


@transaction.atomic
def memory_confirm(*, user: User, memory: Memory) -> Memory:
    """Keep a suggestion: it becomes active, replacing the version it updates and the memory that holds
    its key now (both kept in history). Returns the memory, now active."""
    _check_owner(user, memory)
    _lock_user(user)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    if not current.suggested or current.invalid_at is not None:
        raise MemoryConflict(gettext("This memory is not a suggestion waiting to be kept."))
    now = _now()
    scope = memories_active(user_id=user.pk).filter(in_scope(current.project_id))
    previous = memories_active(user_id=user.pk).filter(superseded_by=current).first()
    replaced = memories_active(user_id=user.pk).filter(pk=previous.pk) if previous else Memory.objects.none()
    if current.key:
        replaced = replaced | scope.filter(key=current.key)
    if scope.filter(content=current.content).exclude(pk__in=replaced.values("pk")).exists():
        raise MemoryConflict(DUPLICATE)
    if not replaced.exists():
        _ensure_room(user=user)
    replaced_ids = list(replaced.values_list("pk", flat=True))
    Memory.objects.filter(pk__in=replaced_ids).update(invalid_at=now, invalid_reason=Memory.InvalidReason.UPDATED)
    if previous is None and replaced_ids:
        # A keyed suggestion learned beside a value set since: link the value it replaces now.
        Memory.objects.filter(pk=replaced_ids[0], superseded_by__isnull=True).update(superseded_by=current)
    try:
        with transaction.atomic():
            Memory.objects.filter(pk=current.pk).update(suggested=False)
    except IntegrityError:  # another value of the key became active meanwhile
        raise MemoryConflict(gettext("Another value of this preference became active meanwhile; try again.")) from None
    current.refresh_from_db()
    return current


UNSET: Any = object()


@transaction.atomic
def memory_settings(*, user: User, memory: Memory, pinned: Any = UNSET, expires_at: Any = UNSET) -> Memory:
    """Pin or unpin a memory, set or clear its end date (any future moment): in place, no new version."""
    _check_owner(user, memory)
    current = Memory.objects.select_for_update().get(pk=memory.pk)
    if current.invalid_at is not None:
        raise MemoryConflict(gettext("Only active memories and suggestions can be changed; restore this one first."))
    fields: dict[str, Any] = {}
    if pinned is not UNSET:
        fields["pinned"] = bool(pinned)
    if expires_at is not UNSET:
        if expires_at is not None:
            if timezone.is_naive(expires_at):
                expires_at = timezone.make_aware(expires_at, UTC)
            if expires_at <= _now():
                raise MemoryRejected(gettext("The end date must be in the future."))
        fields["expires_at"] = expires_at
    if fields:
        Memory.objects.filter(pk=current.pk).update(**fields)
        current.refresh_from_db()
    return current
