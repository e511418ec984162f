"""What Settings → Usage shows: this month by kind and by project, memory's share, the last twelve months."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings

from chat.models import Project
from usage import quotas, selectors
from usage.models import Kind

MEMORY_KINDS = ("memory_block", "judge", "consolidation")


def months_back(today: date, count: int) -> list[date]:
    """The first days of the last `count` months, oldest first, this month last."""
    year, month = today.year, today.month
    firsts = []
    for _ in range(count):
        firsts.append(date(year, month, 1))
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    return firsts[::-1]


def _tokens(row: dict[str, Any]) -> int:
    return int(row["prompt_tokens"]) + int(row["completion_tokens"])


def usage_page_context(*, user_id: int, today: date) -> dict[str, Any]:
    start = today.replace(day=1)
    month = selectors.usage_of_user(user_id=user_id, start=start, end=today)
    by_kind = selectors.usage_summary(rows=month, group="kind")
    by_project = selectors.usage_summary(rows=month, group="project")
    labels = dict(Kind.choices)
    kinds = [{**row, "label": labels.get(row["kind"], row["kind"]), "tokens": _tokens(row)} for row in by_kind["rows"]]
    names = dict(Project.objects.filter(owner_id=user_id).values_list("pk", "name"))
    projects = [{**row, "name": names.get(row["project_id"]), "tokens": _tokens(row)} for row in by_project["rows"]]
    memory = [row for row in kinds if row["kind"] in MEMORY_KINDS]
    memory_cost = [row["cost"] for row in memory if row["cost"] is not None]
    quota = quotas.quota_of(user_id=user_id)
    return {
        "totals": {**by_kind["totals"], "tokens": _tokens(by_kind["totals"])},
        "kinds": kinds,
        "projects": projects,
        "memory_tokens": sum(row["tokens"] for row in memory),
        "memory_cost": sum(memory_cost, Decimal(0)) if memory_cost else None,
        "currency": settings.PRICE_CURRENCY,
        "months": _months(user_id=user_id, today=today),
        "quota": quota,
    }


def _months(*, user_id: int, today: date) -> list[dict[str, Any]]:
    """The last twelve months' tokens and cost, with each bar's height in percent of the largest."""
    firsts = months_back(today, 12)
    rows = selectors.usage_of_user(user_id=user_id, start=firsts[0], end=today)
    by_day = selectors.usage_summary(rows=rows, group="day")["rows"]
    months: dict[date, dict[str, Any]] = {first: {"month": first, "tokens": 0, "cost": None} for first in firsts}
    for row in by_day:
        entry = months[row["day"].replace(day=1)]
        entry["tokens"] += _tokens(row)
        if row["cost"] is not None:
            entry["cost"] = (entry["cost"] or Decimal(0)) + row["cost"]
    largest = max((m["tokens"] for m in months.values()), default=0) or 1
    result = list(months.values())
    for index, entry in enumerate(result):
        entry["height"] = round(100 * entry["tokens"] / largest, 1)
        entry["x"] = index * 30 + 4
        entry["y"] = 100 - entry["height"]
    return result
