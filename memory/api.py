"""Memory routes (SPEC §5): list, add, get, edit, delete, retract, restore, forget everything, export.

Everything reached by id goes through selectors.memory_get_for_user: another user's id is a 404.
A rejected write (services.MemoryRejected) is answered by config/api.py with its status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from ninja import Path, Query, Router
from ninja.responses import Status

from accounts.http import AuthedHttpRequest
from chat.models import Project
from chat.selectors import project_get_for_user
from core.api_errors import AUTH_ERRORS, BODY_ERRORS, ID_MAX, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS, ErrorOut
from memory import connected, moves, selectors, services
from memory.models import Memory
from memory.schemas import (
    ForgetAllOut,
    MemoryDetailOut,
    MemoryExportOut,
    MemoryIn,
    MemoryListQuery,
    MemoryOut,
    MemoryPatch,
)

router = Router(tags=["memories"])

# A memory's id in a path: an integer the database can hold (core/api_errors.py).
MemoryId = Path(..., ge=1, le=ID_MAX)


def _fresh(request: AuthedHttpRequest, memory_id: int) -> Memory:
    return selectors.memory_get_for_user(user=request.user, memory_id=memory_id)


@router.get(
    "",
    summary="List memories: active (default), invalid (history) or all; of every scope, or one",
    response={200: list[MemoryOut], **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
)
def memory_list(request: AuthedHttpRequest, filters: Query[MemoryListQuery]) -> Any:
    rows = selectors.memory_list(user=request.user, status=filters.status)
    if filters.project == "user":
        return rows.filter(project__isnull=True)
    if filters.project is not None:
        return rows.filter(project=_project(request, int(filters.project)))
    return rows


def _project(request: AuthedHttpRequest, project_id: int | None) -> Project | None:
    if project_id is None:
        return None
    return project_get_for_user(user=request.user, project_id=project_id)


@router.post("", response={201: MemoryOut, **WRITE_ERRORS, **BODY_ERRORS, **NOT_FOUND, 409: ErrorOut})
def memory_add(request: AuthedHttpRequest, payload: MemoryIn) -> Any:
    project = _project(request, payload.project_id)
    memory = services.memory_add(user=request.user, content=payload.content, project=project)
    return Status(201, _fresh(request, memory.pk))


COPIES = (
    "every copy of its text goes too: conversation markers, extraction-run records (judge input, raw output, "
    "operations, errors) and what is replayed to the model in every conversation (tool results, assistant items and "
    'summaries that quoted it now say "(a memory that was since deleted)"). The replies shown in conversations '
    "(the display log) keep what the user saw until the conversation is deleted."
)


@router.delete(
    "",
    response={200: ForgetAllOut, **WRITE_ERRORS, **PARAM_ERRORS},
    summary="Forget everything (purge=true also deletes the history)",
    description="Without purge, every active memory moves to history (restorable; the text is kept). With "
    "purge=true every memory is deleted permanently, and " + COPIES,
)
def memory_forget_all(request: AuthedHttpRequest, purge: bool = False) -> Any:
    count = services.memory_forget_all(user=request.user, purge=purge)
    return {"forgotten": count, "purged": purge}


@router.get(
    "/export",
    response={200: MemoryExportOut, **AUTH_ERRORS},
    summary="Everything remembered, with history and sources",
)
def memory_export(request: AuthedHttpRequest) -> Any:
    return selectors.memory_export(user=request.user)


@router.get(
    "/{memory_id}",
    response={200: MemoryDetailOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="One memory, with its latest reads by connected tools",
)
def memory_get(request: AuthedHttpRequest, memory_id: int = MemoryId) -> Any:
    memory = _fresh(request, memory_id)
    memory.reads_shown = connected.reads_of_memory(memory=memory)  # type: ignore[attr-defined]
    return memory


@router.patch(
    "/{memory_id}",
    response={200: MemoryOut, **WRITE_ERRORS, **NOT_FOUND, **BODY_ERRORS, 409: ErrorOut},
    summary="Edit any subset of content, pinned, expires_at, project_id; a new content or scope returns the new "
    "version",
)
def memory_edit(request: AuthedHttpRequest, payload: MemoryPatch, memory_id: int = MemoryId) -> Any:
    with transaction.atomic():  # all of it or nothing
        user = request.user
        memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
        given = payload.model_fields_set
        project = _project(request, payload.project_id) if "project_id" in given else None
        if "content" in given:
            memory = services.memory_edit(user=user, memory=memory, content=payload.content)
        if "project_id" in given:
            memory = moves.memory_move(user=user, memory=memory, project=project)
        changes = {name: getattr(payload, name) for name in ("pinned", "expires_at") if name in given}
        if changes.get("pinned", False) is None:
            changes.pop("pinned")
        if changes:
            memory = services.memory_settings(user=user, memory=memory, **changes)
    return Status(200, _fresh(request, memory.pk))


def _transition(path: str, service: Callable[..., Memory], *, name: str, status: int, summary: str) -> None:
    """Route `POST <path>`: the user's memory (404 unless theirs) through `service`, answered with the
    version it leaves, as `status` (409 when the service refuses)."""

    def view(request: AuthedHttpRequest, memory_id: int = MemoryId) -> Any:
        memory = selectors.memory_get_for_user(user=request.user, memory_id=memory_id)
        changed = service(user=request.user, memory=memory)
        return Status(status, _fresh(request, changed.pk))

    view.__name__ = view.__qualname__ = name  # the operation's id, as a function of that name would have
    response = {status: MemoryOut, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS, 409: ErrorOut}
    router.post(path, response=response, summary=summary)(view)


_transition(
    "/{memory_id}/confirm",
    services.memory_confirm,
    name="memory_confirm",
    status=200,
    summary="Keep a suggestion: it becomes active (replacing the value it updates)",
)


@router.delete(
    "/{memory_id}",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="Delete the memory and its earlier versions permanently (for a suggestion: discard it)",
    description="Permanent, and " + COPIES,
)
def memory_delete(request: AuthedHttpRequest, memory_id: int = MemoryId) -> Any:
    memory = selectors.memory_get_for_user(user=request.user, memory_id=memory_id)
    services.memory_delete(user=request.user, memory=memory)
    return Status(204, None)


_transition(
    "/{memory_id}/retract",
    services.memory_retract,
    name="memory_retract",
    status=200,
    summary="Outdated: move an active memory to history (restorable)",
)
_transition(
    "/{memory_id}/restore",
    services.memory_restore,
    name="memory_restore",
    status=201,
    summary="Make an invalidated memory active again",
)
