"""Moving memories between scopes (SPEC §9 "Projects"): one memory the user moves, and a project's memories
when the project ends.

A row's content never changes, and neither does its scope once it is in history: moving an active memory
invalidates it (`invalid_reason: "moved"`) and inserts the same sentence in the other scope as its next
version (`superseded_by`), so the move is in its history and restoring the old row brings it back where it
was. In the scope it arrives in, the moved value of a key replaces the value held there (kept in history).

Ending a project (chat.projects.project_end, through the project enders) with "move" hands every row of
the project to the user in place, history included; an active row the user's scope already says (the same
sentence, or a value of a key it holds) goes to history instead, restorable. With "delete" each of the
project's memories is deleted as `DELETE /api/memories/{id}` deletes one: with its earlier versions and every
copy of its text (memory.forgetting), but for rows that were since moved out of the project (their later
version lives elsewhere and keeps its history).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.http import Http404

from accounts.models import User
from chat.extensions import ProjectEnding
from chat.models import Project
from memory import forgetting
from memory.models import ExtractionRun, Memory, MemoryVector
from memory.selectors import in_scope, memories_active
from memory.services import (
    DUPLICATE,
    MemoryConflict,
    _now,
    copy_sources,
    create_active,
    lock_active,
)


@transaction.atomic
def memory_move(*, user: User, memory: Memory, project: Project | None) -> Memory:
    """Move an active memory to `project`'s scope (None: about the user); returns the new version."""
    if memory.owner_id != user.pk or (project is not None and project.owner_id != user.pk):
        raise Http404("No Memory matches the given query.")
    target = project.pk if project is not None else None
    now = _now()
    current = lock_active(user=user, memory=memory, now=now, change="move")
    if current.project_id == target:
        return current
    there = memories_active(user_id=user.pk).filter(in_scope(target))
    if there.filter(content=current.content).exists():
        raise MemoryConflict(DUPLICATE)
    Memory.objects.filter(pk=current.pk).update(invalid_at=now, invalid_reason=Memory.InvalidReason.MOVED)
    if current.key:
        there.filter(key=current.key).update(invalid_at=now, invalid_reason=Memory.InvalidReason.REPLACED)
    new = create_active(
        owner=user,
        content=current.content,
        origin=current.origin,
        key=current.key,
        pinned=current.pinned,
        sensitive=current.sensitive,
        expires_at=current.expires_at,
        last_used_at=current.last_used_at,
        project_id=target,
    )
    copy_sources(source=current, target=new)
    # The same sentence has the same vector: no new embeddings request.
    vectors = MemoryVector.objects.filter(memory=current)
    MemoryVector.objects.bulk_create([MemoryVector(memory=new, model=v.model, vector=v.vector) for v in vectors])
    Memory.objects.filter(pk=current.pk).update(superseded_by=new)
    return new


def project_memories_end(ending: ProjectEnding) -> None:
    """chat.extensions project ender: move the project's memories to the user, or delete them permanently."""
    if ending.memories == "delete":
        _project_memories_delete(user_id=ending.user_id, project_id=ending.project_id)
    else:
        _project_memories_to_user(user_id=ending.user_id, project_id=ending.project_id)


def _project_memories_to_user(*, user_id: int, project_id: int) -> None:
    now = _now()
    rows = Memory.objects.filter(owner_id=user_id, project_id=project_id)
    user_scope = memories_active(user_id=user_id).filter(project__isnull=True)
    said = rows.filter(invalid_at__isnull=True, content__in=user_scope.values("content"))
    keyed = rows.filter(invalid_at__isnull=True, suggested=False).exclude(key="")
    keyed = keyed.filter(key__in=user_scope.exclude(key="").values("key"))
    waiting = set(said.filter(suggested=True).values_list("pk", flat=True))
    if waiting:  # a suggestion of a sentence the user's scope already holds has nothing left to ask
        forgetting.memories_forget(user_id=user_id, memory_ids=waiting)
        Memory.objects.filter(pk__in=waiting).delete()
    clash = set(said.values_list("pk", flat=True)) | set(keyed.values_list("pk", flat=True))
    Memory.objects.filter(pk__in=clash).update(invalid_at=now, invalid_reason=Memory.InvalidReason.MOVED)
    rows.update(project=None)


def _project_name_redact(*, user_id: int, project_id: int) -> None:
    """Extraction-run records name the project their batch came from (memory.extraction.judge.PROJECT_NOTE): a deleted
    project leaves its name in none of them."""
    name = Project.objects.filter(pk=project_id).values_list("name", flat=True).first()
    if not name:
        return
    forms = forgetting.json_forms(f'project "{" ".join(name.split())}"')
    rows = ExtractionRun.objects.select_for_update().filter(owner_id=user_id).only("pk", "judge_input")
    for run in rows.iterator(chunk_size=200):
        redacted = forgetting.redact_value(run.judge_input, forms, "project (deleted)")
        if redacted != run.judge_input:
            ExtractionRun.objects.filter(pk=run.pk).update(judge_input=redacted)


def _head(pk: int, chains: Mapping[int, int | None]) -> int:
    """The latest version of the memory `pk` (its chain followed through `superseded_by`)."""
    head, seen = pk, {pk}
    while chains.get(head) is not None and chains[head] not in seen:
        head = chains[head]  # type: ignore[assignment]
        seen.add(head)
    return head


def _project_memories_delete(*, user_id: int, project_id: int) -> None:
    _project_name_redact(user_id=user_id, project_id=project_id)
    chains = dict(Memory.objects.filter(owner_id=user_id).values_list("pk", "superseded_by_id"))
    scopes = dict(Memory.objects.filter(owner_id=user_id).values_list("pk", "project_id"))
    # A row since moved out of the project stays with its later version.
    doomed = {pk for pk, scope in scopes.items() if scope == project_id and scopes.get(_head(pk, chains)) == project_id}
    earlier = {pk for pk, later in chains.items() if later in doomed}
    while earlier - doomed:  # every earlier version of a deleted memory goes with it, whatever its scope
        doomed |= earlier
        earlier = {pk for pk, later in chains.items() if later in doomed}
    kept = Memory.objects.filter(owner_id=user_id, project_id=project_id).exclude(pk__in=doomed)
    kept.update(project=None)  # history of memories living elsewhere now
    if doomed:
        forgetting.memories_forget(user_id=user_id, memory_ids=doomed)  # every copy of their text, first
        Memory.objects.filter(owner_id=user_id, pk__in=doomed).delete()
