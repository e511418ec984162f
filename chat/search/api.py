"""`GET /api/search`: the user's own messages and conversation titles that match, newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from chat.schemas import ErrorOut
from chat.search.query import OFFSET_MAX, PAGE_MAX, QUERY_MAX_CHARS, SearchRejected, search
from config.api_errors import AUTH_ERRORS, PARAM_ERRORS

router = Router(tags=["search"])


class SearchParams(Schema):
    q: str = Field(
        "",
        description=f"What to look for: words, or Chinese text (1–{QUERY_MAX_CHARS} characters).",
        json_schema_extra={"minLength": 1, "maxLength": QUERY_MAX_CHARS},
    )
    limit: int = Field(20, ge=1, le=PAGE_MAX)
    offset: int = Field(0, ge=0, le=OFFSET_MAX)


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
    response={200: list[SearchHitOut], 400: ErrorOut, **AUTH_ERRORS, **PARAM_ERRORS},
    summary="Search your conversations: messages (yours and the replies) and titles, newest first",
    openapi_extra={
        "responses": {
            "200": {
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
def search_list(request: HttpRequest, response: HttpResponse, params: Query[SearchParams]) -> Any:
    try:
        page = search(user=request.auth, text=params.q, limit=params.limit, offset=params.offset)  # type: ignore[attr-defined]
    except SearchRejected as exc:
        return Status(exc.status, {"detail": str(exc)})
    response["X-Total-Count"] = str(page.total)
    return page.hits
