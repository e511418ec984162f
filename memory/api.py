"""Memory routes (SPEC §5): list, add, get, edit, delete, restore, forget everything, export.

Everything reached by id goes through selectors.memory_get_for_user: another user's id is a 404.
A rejected write (services.MemoryRejected) is answered by config/api.py with its status.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from accounts.models import User
from memory import selectors, services
from memory.models import Memory
from memory.schemas import (
    ErrorOut,
    ForgetAllOut,
    MemoryExportOut,
    MemoryIn,
    MemoryListQuery,
    MemoryOut,
    MemoryPatch,
)

router = Router(tags=["memories"])


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def _fresh(request: HttpRequest, memory_id: int) -> Memory:
    return selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)


@router.get("", response=list[MemoryOut], summary="List memories: active (default), invalid (history) or all")
def memory_list(request: HttpRequest, filters: Query[MemoryListQuery]) -> Any:
    return selectors.memory_list(user=_user(request), status=filters.status)


@router.post("", response={201: MemoryOut, 400: ErrorOut, 409: ErrorOut})
def memory_add(request: HttpRequest, payload: MemoryIn) -> Any:
    memory = services.memory_add(user=_user(request), content=payload.content)
    return Status(201, _fresh(request, memory.pk))


@router.delete("", response=ForgetAllOut, summary="Forget everything (purge=true also deletes the history)")
def memory_forget_all(request: HttpRequest, purge: bool = False) -> Any:
    count = services.memory_forget_all(user=_user(request), purge=purge)
    return {"forgotten": count, "purged": purge}


@router.get("/export", response=MemoryExportOut, summary="Everything remembered, with history and sources")
def memory_export(request: HttpRequest) -> Any:
    return selectors.memory_export(user=_user(request))


@router.get("/{memory_id}", response=MemoryOut)
def memory_get(request: HttpRequest, memory_id: int) -> Any:
    return _fresh(request, memory_id)


@router.patch(
    "/{memory_id}",
    response={200: MemoryOut, 400: ErrorOut, 404: ErrorOut, 409: ErrorOut},
    summary="Edit any subset of content, pinned, expires_at; a new content returns the new version",
)
def memory_edit(request: HttpRequest, memory_id: int, payload: MemoryPatch) -> Any:
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    given = payload.model_fields_set
    if "content" in given:
        memory = services.memory_edit(user=user, memory=memory, content=payload.content)
    changes = {name: getattr(payload, name) for name in ("pinned", "expires_at") if name in given}
    if changes.get("pinned", False) is None:
        changes.pop("pinned")
    if changes:
        memory = services.memory_settings(user=user, memory=memory, **changes)
    return Status(200, _fresh(request, memory.pk))


@router.post(
    "/{memory_id}/confirm",
    response={200: MemoryOut, 404: ErrorOut, 409: ErrorOut},
    summary="Keep a suggestion: it becomes active (replacing the value it updates)",
)
def memory_confirm(request: HttpRequest, memory_id: int) -> Any:
    memory = selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)
    kept = services.memory_confirm(user=_user(request), memory=memory)
    return Status(200, _fresh(request, kept.pk))


@router.delete(
    "/{memory_id}",
    response={204: None, 404: ErrorOut},
    summary="Delete the memory and its earlier versions permanently (for a suggestion: discard it)",
)
def memory_delete(request: HttpRequest, memory_id: int) -> Any:
    memory = selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)
    services.memory_delete(user=_user(request), memory=memory)
    return Status(204, None)


@router.post(
    "/{memory_id}/restore", response={201: MemoryOut, 409: ErrorOut}, summary="Make an invalidated memory active again"
)
def memory_restore(request: HttpRequest, memory_id: int) -> Any:
    memory = selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)
    new = services.memory_restore(user=_user(request), memory=memory)
    return Status(201, _fresh(request, new.pk))
