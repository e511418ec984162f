"""Project routes (SPEC §9 "Projects"): list, create, get, change, end.

Everything reached by id goes through selectors.project_get_for_user: another user's project is a 404.
A rejected write (projects.ProjectRejected) is answered by config/api.py with its status.
"""

from __future__ import annotations

from typing import Any

from ninja import Path, Query, Router
from ninja.responses import Status

from accounts.http import AuthedHttpRequest
from chat import projects, selectors
from chat.models import Project
from chat.schemas import ProjectDeleteQuery, ProjectIn, ProjectOut, ProjectPatch
from core.api_errors import AUTH_ERRORS, BODY_ERRORS, ID_MAX, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS

router = Router(tags=["projects"])

ProjectId = Path(..., ge=1, le=ID_MAX)


def _project(request: AuthedHttpRequest, project_id: int) -> Project:
    return selectors.project_get_for_user(user=request.user, project_id=project_id)


@router.get("", response={200: list[ProjectOut], **AUTH_ERRORS}, summary="List your projects, by name")
def project_list(request: AuthedHttpRequest) -> Any:
    return selectors.project_list(user=request.user)


@router.post("", response={201: ProjectOut, **WRITE_ERRORS, **BODY_ERRORS}, summary="Start a project")
def project_create(request: AuthedHttpRequest, payload: ProjectIn) -> Any:
    project = projects.project_create(
        user=request.user, name=payload.name, instructions=payload.instructions, memory_mode=payload.memory_mode
    )
    return Status(201, project)


@router.get("/{project_id}", response={200: ProjectOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS})
def project_get(request: AuthedHttpRequest, project_id: int = ProjectId) -> Any:
    return _project(request, project_id)


@router.patch(
    "/{project_id}",
    response={200: ProjectOut, **WRITE_ERRORS, **NOT_FOUND, **BODY_ERRORS},
    summary="Change any subset of name, instructions and memory mode",
    description="A new memory mode applies from the next turn of its conversations; memories keep their scope.",
)
def project_patch(request: AuthedHttpRequest, payload: ProjectPatch, project_id: int = ProjectId) -> Any:
    project = _project(request, project_id)
    changes = {name: getattr(payload, name) for name in payload.model_fields_set}
    if "instructions" in changes:
        changes["instructions"] = changes["instructions"] or ""
    return projects.project_update(project=project, **changes)


@router.delete(
    "/{project_id}",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="End a project: move what it holds to you (default) or delete it",
    description="`memories=move` (default): its conversations stay, in no project, and its memories become yours "
    "(about you, everywhere), with their history. `memories=delete`: its conversations are deleted with every copy "
    "of their messages, and its memories are deleted permanently with every copy of their text, as "
    "`DELETE /api/memories/{id}` does.",
)
def project_delete(request: AuthedHttpRequest, filters: Query[ProjectDeleteQuery], project_id: int = ProjectId) -> Any:
    projects.project_end(project=_project(request, project_id), memories=filters.memories)
    return Status(204, None)
