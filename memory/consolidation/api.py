"""Tidy-up routes (SPEC §9): run a pass, list the proposals, accept, reject or undo one.

Everything reached by id goes through services.proposal_get_for_user: another user's id is a 404. A
proposal whose memories changed meanwhile is a 409 (memory.services.MemoryConflict, config/api.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Path, Router, Schema
from ninja.responses import Status

from accounts.http import AuthedHttpRequest
from core.api_errors import AUTH_ERRORS, ID_MAX, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS, ErrorOut
from memory.consolidation import selectors, services
from memory.consolidation.candidates import user_clusters
from memory.consolidation.tasks import consolidate_later

router = Router(tags=["memories"])
ProposalId = Path(..., ge=1, le=ID_MAX)


class BeforeOut(Schema):
    id: int
    content: str
    created_at: datetime
    sources: list[int]


class ProposalOut(Schema):
    id: int
    op: str
    status: str
    project_id: int | None
    ids: list[int]
    by: int | None
    content: str
    expires: datetime | None
    before: list[BeforeOut]
    result_id: int | None
    created_at: datetime
    decided_at: datetime | None


class ConsolidateOut(Schema):
    status: str
    clusters: int


@router.post("/consolidate", response={202: ConsolidateOut, **WRITE_ERRORS}, summary="Run a tidy-up pass")
def consolidate(request: AuthedHttpRequest) -> Any:
    clusters = len(user_clusters(user_id=request.user.pk))  # the estimate: at most one judge call each
    consolidate_later(user_id=request.user.pk)
    return Status(202, {"status": "queued", "clusters": clusters})


@router.get(
    "/proposals", response={200: list[ProposalOut], **AUTH_ERRORS, **PARAM_ERRORS}, summary="Tidy-up suggestions"
)
def proposals(request: AuthedHttpRequest, status: Literal["", "pending", "accepted", "rejected", "undone"] = "") -> Any:
    return selectors.proposals_shown(user=request.user, status=status)


def _decide(request: AuthedHttpRequest, proposal_id: int, decide: Any) -> Any:
    user = request.user
    proposal = services.proposal_get_for_user(user=user, proposal_id=proposal_id)
    decide(user=user, proposal=proposal)
    return selectors.proposals_shown(user=user, ids=[proposal_id])[0]


DECISION = {200: ProposalOut, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS, 409: ErrorOut}


@router.post("/proposals/{proposal_id}/accept", response=DECISION, summary="Apply a tidy-up suggestion")
def accept(request: AuthedHttpRequest, proposal_id: int = ProposalId) -> Any:
    return _decide(request, proposal_id, services.proposal_accept)


@router.post("/proposals/{proposal_id}/reject", response=DECISION, summary="Dismiss a tidy-up suggestion for good")
def reject(request: AuthedHttpRequest, proposal_id: int = ProposalId) -> Any:
    return _decide(request, proposal_id, services.proposal_reject)


@router.post("/proposals/{proposal_id}/undo", response=DECISION, summary="Undo an accepted tidy-up suggestion")
def undo(request: AuthedHttpRequest, proposal_id: int = ProposalId) -> Any:
    return _decide(request, proposal_id, services.proposal_undo)
