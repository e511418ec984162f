"""`GET /api/me/usage` (SPEC §9 "Usage"): the user's own usage, never anyone else's."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError
from pydantic import field_validator

from accounts.http import AuthedHttpRequest
from core.api_errors import AUTH_ERRORS, PARAM_ERRORS
from usage import selectors, services

router = Router(tags=["usage"])
ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class UsageQuery(Schema):
    from_: date | None = Field(
        None, alias="from", description="First day (YYYY-MM-DD); default: the first of the month of `to`."
    )
    to: date | None = Field(None, description="Last day, included; default: today.")
    group: Literal["kind", "model", "project", "day"] | None = Field(
        None, description="One row per kind, model, project or day; unset: one per day, kind, model and project."
    )

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _iso_day(cls, value: Any) -> Any:
        # Lax parsing would take "0" as a Unix time (1970-01-01); the document says YYYY-MM-DD.
        if isinstance(value, str) and not ISO_DAY.fullmatch(value):
            raise ValueError("a date written YYYY-MM-DD")
        return value


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
def usage_get(request: AuthedHttpRequest, query: Query[UsageQuery]) -> dict[str, Any]:
    today = services.today()
    end = query.to or today
    start = query.from_ or end.replace(day=1)  # `to` alone asks for its month up to that day
    if start > end:
        raise HttpError(422, _("“from” must not be after “to”."))
    # Any span is fine: rows exist only for days with calls (one per day, kind, model and project at most).
    rows = selectors.usage_of_user(
        user_id=request.user.pk,
        start=start,
        end=end,
    )
    return selectors.usage_summary(rows=rows, group=query.group)
