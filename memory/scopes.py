"""Which memories a conversation may use, by scope (SPEC §9 "Projects").

A memory is about the user (`project` null: every conversation outside an isolated project) or about one
piece of work (a project's: only that project's conversations). A conversation's project decides what its
turns read, and learn:

- no project: the user's memories only, never a project's;
- `shared`: the user's and the project's;
- `isolated`: the project's only (nothing general goes in, nothing learned there leaves);
- `off`: none (like a temporary chat).

A keyed preference is unique per scope, and where both scopes hold a key the project's value wins in its
chats (it replaces the user's value there, nowhere else).

This module is the one place that rule lives: the turn's block (memory.context, through the same filter in
SQL in memory.selectors.memory_rows_for_turn), the judge's view of a batch and its validation, and the
history search all ask `scope_filter` or `memories_for_scope`. No queries but the ones asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.db.models import Exists, OuterRef, Q, QuerySet

from chat.models import Conversation, Project
from memory.extraction.judge import PendingMessage
from memory.models import Memory
from memory.selectors import memories_active

Scope = Literal["user", "project"]


@dataclass(frozen=True)
class ScopeView:
    """What a conversation's turns read and learn, as plain values (a project's id and mode, or none)."""

    project_id: int | None = None
    mode: str = ""  # Project.MemoryMode, "" outside projects

    @classmethod
    def of(cls, project: Project | None) -> ScopeView:
        return cls() if project is None else cls(project_id=project.pk, mode=project.memory_mode)

    @property
    def uses_memory(self) -> bool:
        return self.mode != Project.MemoryMode.OFF

    @property
    def reads_user(self) -> bool:
        """Whether the user's general memories are used (and may be learned into)."""
        return self.project_id is None or self.mode == Project.MemoryMode.SHARED

    @property
    def isolated(self) -> bool:
        return self.mode == Project.MemoryMode.ISOLATED

    def learned_project(self, scope: str) -> int | None:
        """The project a fact learned here goes to when the judge chose `scope` ("user" or "project"): an
        isolated project keeps everything, outside projects nothing goes to one."""
        if self.project_id is None or not self.uses_memory:
            return None
        if self.isolated or scope == "project":
            return self.project_id
        return None


def scope_of_batch(pending: Sequence[PendingMessage]) -> ScopeView:
    """The scope of an extraction batch (all its messages share one, memory.extraction.reads.pending_batch)."""
    if not pending or pending[0].project_id is None:
        return ScopeView()
    return ScopeView(project_id=pending[0].project_id, mode=pending[0].project_mode)


def scope_of_conversation(conversation: Conversation) -> ScopeView:
    """The conversation's scope; reads its project only when it has one and it is not loaded yet."""
    if conversation.project_id is None:
        return ScopeView()
    return ScopeView.of(conversation.project)


def learns_here(conversation: Conversation) -> bool:
    """Whether memory is used and learned in the conversation: not a temporary one, not in a project whose
    memory is off. No query once the conversation's project is loaded (a turn loads it)."""
    return not conversation.temporary and scope_of_conversation(conversation).uses_memory


def scope_filter(view: ScopeView) -> Q:
    """The Memory rows a conversation of this scope may use (whatever their status): a filter to add to a
    query of one user's memories."""
    if not view.uses_memory:
        return Q(pk__in=[])
    if view.project_id is None:
        return Q(project__isnull=True)
    if view.isolated:
        return Q(project_id=view.project_id)
    return Q(project__isnull=True) | Q(project_id=view.project_id)


def memories_for_scope(*, user_id: int, view: ScopeView) -> QuerySet[Memory]:
    """The active memories a turn in a conversation of this scope may use, oldest first: the user's unless
    the project is isolated, plus the project's; none when its memory is off. Where the project holds a
    key, the user's value of that key is left out (the project's wins in its chats)."""
    rows = memories_active(user_id=user_id).filter(scope_filter(view))
    if view.project_id is not None and view.reads_user:
        project_keys = memories_active(user_id=user_id).filter(project_id=view.project_id, key=OuterRef("key"))
        rows = rows.exclude(Q(project__isnull=True) & ~Q(key="") & Exists(project_keys))
    return rows


def memories_for_conversation(*, user_id: int, conversation: Conversation) -> QuerySet[Memory]:
    """`memories_for_scope` for a conversation: none in a temporary one."""
    if conversation.temporary:
        return Memory.objects.none()
    return memories_for_scope(user_id=user_id, view=scope_of_conversation(conversation))
