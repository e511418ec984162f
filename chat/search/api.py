"""`GET /api/search`: the user's own messages and conversation titles that match, newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from accounts.http import AuthedHttpRequest
from chat.schemas import PROJECT_FILTER
from chat.search.query import OFFSET_MAX, PAGE_MAX, QUERY_MAX_CHARS, SearchRejected, search
from chat.selectors import project_get_for_user
from core.api_errors import AUTH_ERRORS, NOT_FOUND, PARAM_ERRORS, ErrorOut

router = Router(tags=["search"])


class SearchParams(Schema):
    q: str = Field(
        "",
        description=f"What to look for: words, or Chinese text (1–{QUERY_MAX_CHARS} characters).",
        json_schema_extra={"minLength": 1, "maxLength": QUERY_MAX_CHARS},
    )
    limit: int = Field(20, ge=1, le=PAGE_MAX)
    offset: int = Field(0, ge=0, le=OFFSET_MAX)
    project: str | None = Field(
        None,
        pattern=PROJECT_FILTER,
        description="Only in this project's conversations (its id; another user's answers 404), or \"none\" for "
        "those in no project.",
    )


class SearchHitOut(Schema):
    message_id: int | None = Field(..., description="The message that matched; null when the title matched.")
    conversation_id: UUID
    conversation_title: str
    role: str | None = Field(..., description="`user` or `assistant`; null for a title.")
    excerpt: str = Field(..., description="Plain text: the match in context.")
    highlights: list[list[int]] = Field(..., description="`[start, end)` offsets of the matches in `excerpt`.")
    created_at: datetime


@router.get(
    "",
    response={200: list[SearchHitOut], 400: ErrorOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="Search your conversations: messages (yours and the replies) and titles, newest first",
    openapi_extra={
        "responses": {
            200: {
                "description": "OK",
                "content": {
                    "application/json": {
                        "schema": {"type": "array", "items": {"$ref": "#/components/schemas/SearchHitOut"}}
                    }
                },
                "headers": {"X-Total-Count": {"description": "How many hits in all.", "schema": {"type": "integer"}}},
            }
        }
    },
    description=(
        "Every word must match (the last one also as the beginning of a word); two-character Chinese words "
        "match inside longer text. Temporary conversations are not searched. `X-Total-Count` gives the "
        "number of hits. An empty `q`, or one over the limit, answers 400."
    ),
)
def search_list(request: AuthedHttpRequest, response: HttpResponse, params: Query[SearchParams]) -> Any:
    user = request.user
    project: int | Literal["none"] | None = None
    if params.project == "none":
        project = "none"
    elif params.project is not None:
        project = project_get_for_user(user=user, project_id=int(params.project)).pk
    try:
        page = search(user=user, text=params.q, limit=params.limit, offset=params.offset, project=project)
    except SearchRejected as exc:
        raise HttpError(exc.status, str(exc)) from exc
    response["X-Total-Count"] = str(page.total)
    return page.hits
