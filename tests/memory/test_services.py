"""The user's own writes: which ones skip the pending backlog, and how restore links versions."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from chat.models import Message
from memory import services
from memory.models import Memory
from tests.helpers import make_memory, say

pytestmark = pytest.mark.django_db


def status(message: Message) -> str:
    return Message.objects.get(pk=message.pk).memory_status


def test_adding_a_memory_leaves_pending_messages_for_review(user: Any, conversation: Any) -> None:
    backlog = say(conversation, "I've always liked small phones")

    services.memory_add(user=user, content="Prefers metric units")

    assert status(backlog) == Message.MemoryStatus.PENDING


def test_restoring_a_memory_leaves_pending_messages_for_review(user: Any, conversation: Any) -> None:
    old = make_memory(owner=user, content="Prefers tea")
    services.memory_forget_all(user=user)
    backlog = say(conversation, "I've always liked small phones")

    services.memory_restore(user=user, memory=Memory.objects.get(pk=old.pk))

    assert status(backlog) == Message.MemoryStatus.PENDING


def test_edit_delete_and_forget_all_still_skip_the_backlog(user: Any, conversation: Any) -> None:
    memory = make_memory(owner=user, content="Prefers tea")
    for action in ("edit", "delete", "forget_all"):
        backlog = say(conversation, f"A message before the {action}")
        if action == "edit":
            memory = services.memory_edit(user=user, memory=memory, content="Prefers green tea")
        elif action == "delete":
            services.memory_delete(user=user, memory=memory)
        else:
            services.memory_forget_all(user=user)
        assert status(backlog) == Message.MemoryStatus.SKIPPED, action


def forgotten_successor(user: Any) -> tuple[Memory, Memory]:
    """Memory 1 updated to memory 2, which the user then asked to forget."""
    first = make_memory(owner=user, content="Prefers small phones, finds them easier to use one-handed")
    second = make_memory(owner=user, content="Prefers large-screen phones")
    Memory.objects.filter(pk=first.pk).update(
        invalid_at=second.created_at, invalid_reason=Memory.InvalidReason.UPDATED, superseded_by=second
    )
    Memory.objects.filter(pk=second.pk).update(
        invalid_at=second.created_at, invalid_reason=Memory.InvalidReason.RETRACTED
    )
    return Memory.objects.get(pk=first.pk), Memory.objects.get(pk=second.pk)


def test_restore_after_a_forgotten_later_version_links_it_and_keeps_its_reason(user: Any) -> None:
    first, second = forgotten_successor(user)

    restored = services.memory_restore(user=user, memory=first)

    second.refresh_from_db()
    assert second.invalid_reason == Memory.InvalidReason.RETRACTED  # still says why it was forgotten
    assert second.superseded_by_id == restored.pk  # the chain continues to the restored version
    assert restored.is_active and restored.content == first.content


def test_two_restores_from_one_chain_never_leave_two_active_versions(user: Any) -> None:
    first, second = forgotten_successor(user)

    services.memory_restore(user=user, memory=first)
    latest = services.memory_restore(user=user, memory=Memory.objects.get(pk=second.pk))

    assert list(Memory.objects.filter(owner=user, invalid_at__isnull=True)) == [latest]
    assert latest.content == "Prefers large-screen phones"


def test_history_says_a_forgotten_row_was_restored_later_not_replaced(client: Any, user: Any) -> None:
    first, _ = forgotten_successor(user)
    services.memory_restore(user=user, memory=first)
    client.force_login(user)
    body = client.get("/settings/memory/").content.decode()
    # The forgotten row was not restored itself: an earlier version was, and History says which.
    assert "Later you restored an earlier version" in body and "Restored later as" not in body
    history = body[body.index('id="memory-history"') :]
    assert f'id="memory-{first.pk}"' not in history  # its wording is in use again: listed once, in the list


def test_restoring_a_forgotten_memory_itself_keeps_its_reason(user: Any) -> None:
    _, second = forgotten_successor(user)

    restored = services.memory_restore(user=user, memory=second)

    second.refresh_from_db()
    assert second.invalid_reason == Memory.InvalidReason.RETRACTED and second.superseded_by_id == restored.pk


def test_restore_replaces_and_links_the_active_later_version(user: Any) -> None:
    old = make_memory(owner=user, content="Prefers tea")
    newer = services.memory_edit(user=user, memory=old, content="Prefers green tea")

    restored = services.memory_restore(user=user, memory=Memory.objects.get(pk=old.pk))

    newer.refresh_from_db()
    assert newer.invalid_reason == Memory.InvalidReason.REPLACED and newer.superseded_by_id == restored.pk
    assert list(Memory.objects.filter(owner=user, invalid_at__isnull=True)) == [restored]


def _edit(user: Any, memory: Memory) -> Memory:
    return services.memory_edit(user=user, memory=memory, content="Prefers coffee")


def _move(user: Any, memory: Memory) -> Memory:
    from memory.moves import memory_move

    return memory_move(user=user, memory=memory, project=None)


@pytest.mark.parametrize(
    ("change", "inactive", "suggested"),
    [
        (_edit, "can be edited; restore this one first", "keep it first, then edit it"),
        (_move, "can be moved; restore this one first", "keep it first, then move it"),
    ],
)
def test_an_edit_or_a_move_refuses_a_memory_in_history_or_a_suggestion_with_its_own_reason(
    user: Any, change: Any, inactive: str, suggested: str
) -> None:
    old = make_memory(owner=user, content="Prefers tea", invalid_at=timezone.now(), invalid_reason="retracted")
    waiting = make_memory(owner=user, content="Prefers green tea", suggested=True)

    with pytest.raises(services.MemoryConflict, match=inactive):
        change(user, old)
    with pytest.raises(services.MemoryConflict, match=suggested):
        change(user, waiting)
    assert Memory.objects.count() == 2
