"""`GET /api/me/usage` (SPEC §9 "Usage"): the user's own usage, never anyone else's."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal

from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from config.api_errors import AUTH_ERRORS, PARAM_ERRORS
from usage import selectors, services

router = Router(tags=["usage"])
MAX_DAYS = 3660  # ten years: a period is a few thousand rows at most


class UsageQuery(Schema):
    from_: date | None = Field(None, alias="from", description="First day (YYYY-MM-DD); default: this month's first.")
    to: date | None = Field(None, description="Last day, included; default: today.")
    group: Literal["kind", "model", "project", "day"] | None = Field(
        None, description="One row per kind, model, project or day; unset: one per day, kind, model and project."
    )


class UsageRowOut(Schema):
    kind: str | None
    model: str | None
    project_id: int | None
    day: date | None
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = Field(description="Part of these counts is our estimate: the provider sent no usage.")
    cost: Decimal | None = Field(description="In `currency`; null when no model here has a price (tokens only).")


class UsageTotalsOut(Schema):
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    cost: Decimal | None


class UsageOut(Schema):
    rows: list[UsageRowOut]
    totals: UsageTotalsOut
    currency: str


@router.get("", response={200: UsageOut, **AUTH_ERRORS, **PARAM_ERRORS}, summary="Your tokens and their cost")
def usage_get(request: HttpRequest, query: Query[UsageQuery]) -> dict[str, Any]:
    today = services.today()
    start, end = query.from_ or today.replace(day=1), query.to or today
    if start > end:
        raise HttpError(422, _("“from” must not be after “to”."))
    if end - start > timedelta(days=MAX_DAYS):
        raise HttpError(422, _("A period is at most ten years long."))
    rows = selectors.usage_of_user(
        user_id=request.user.pk,  # type: ignore[arg-type]
        start=start,
        end=end,
    )
    return selectors.usage_summary(rows=rows, group=query.group)
