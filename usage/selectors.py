"""Reads: a user's usage over a period, grouped, priced (SPEC §9 "Usage"); the month's total for quotas."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from django.conf import settings
from django.db.models import QuerySet, Sum

from usage.models import DailyUsage, ModelPrice, ReplyMemoryTokens

Group = Literal["kind", "model", "project", "day"]
GROUP_FIELDS: dict[str, str] = {"kind": "kind", "model": "model", "project": "project_key", "day": "day"}
MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    input: Decimal  # per million prompt tokens, in PRICE_CURRENCY
    output: Decimal  # per million completion tokens

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (self.input * prompt_tokens + self.output * completion_tokens) / MILLION


def prices() -> dict[str, Price]:
    """Every priced model: MODEL_PRICES, then the admin's table, which wins."""
    table: dict[str, Price] = {}
    for model, price in (settings.MODEL_PRICES or {}).items():
        try:
            table[str(model)] = Price(Decimal(str(price["input"])), Decimal(str(price["output"])))
        except (KeyError, TypeError, ArithmeticError, ValueError):
            continue  # a malformed entry prices nothing rather than breaking every page
    for row in ModelPrice.objects.all():
        table[row.model] = Price(row.input, row.output)
    return table


def usage_of_user(*, user_id: int, start: date, end: date) -> QuerySet[DailyUsage]:
    """The user's rows from `start` to `end`, both included."""
    return DailyUsage.objects.filter(user_id=user_id, day__gte=start, day__lte=end)


def usage_summary(*, rows: QuerySet[DailyUsage], group: Group | None) -> dict[str, Any]:
    """`{"rows": [...], "totals": {...}}`: one row per value of `group` (every row, ungrouped), each with
    its tokens, whether any part was estimated, and its cost (None when none of its models has a price:
    tokens only). One query; cost is reckoned per model, then summed into the group."""
    key = GROUP_FIELDS[group] if group else None
    fields = [key] if key else ["kind", "model", "project_key", "day"]
    by_model = (
        rows.values(*dict.fromkeys([*fields, "model"]))
        .annotate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), guessed=Sum("estimated_tokens"))
        .order_by(*fields)
    )
    table = prices()
    grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
    for part in by_model:
        values = tuple(part[f] for f in fields)
        row = grouped.setdefault(values, _empty_row(dict(zip(fields, values, strict=True))))
        _add(row, part, table.get(part["model"]))
    result = list(grouped.values())
    totals = _empty_row({})
    for row in result:
        _add_row(totals, row)
    return {
        "rows": result,
        "totals": {k: totals[k] for k in ("prompt_tokens", "completion_tokens", "estimated", "cost")},
        "currency": settings.PRICE_CURRENCY,
    }


def _empty_row(values: dict[str, Any]) -> dict[str, Any]:
    project = values.get("project_key")
    return {
        "kind": values.get("kind"),
        "model": values.get("model"),
        "project_id": project or None,
        "day": values.get("day"),
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "estimated": False,
        "cost": None,
    }


def _add(row: dict[str, Any], part: dict[str, Any], price: Price | None) -> None:
    prompt, completion = int(part["prompt"] or 0), int(part["completion"] or 0)
    row["prompt_tokens"] += prompt
    row["completion_tokens"] += completion
    row["estimated"] = row["estimated"] or bool(part["guessed"])
    if price is not None:
        row["cost"] = (row["cost"] or Decimal(0)) + price.cost(prompt, completion)


def _add_row(total: dict[str, Any], row: dict[str, Any]) -> None:
    total["prompt_tokens"] += row["prompt_tokens"]
    total["completion_tokens"] += row["completion_tokens"]
    total["estimated"] = total["estimated"] or row["estimated"]
    if row["cost"] is not None:
        total["cost"] = (total["cost"] or Decimal(0)) + row["cost"]


def month_tokens(*, user_id: int, today: date) -> int:
    """Every token the user used this calendar month (prompt and completion, every kind)."""
    totals = DailyUsage.objects.filter(user_id=user_id, day__gte=today.replace(day=1), day__lte=today).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
    )
    return int(totals["prompt"] or 0) + int(totals["completion"] or 0)


def memory_tokens_annotate(messages: list[Any]) -> None:
    """chat.extensions message annotator: `memory_tokens` on each reply, the memory block's tokens in its
    prompts ("memory: N tokens" beside "Used N memories"), in one query; 0 when none were recorded."""
    replies = {m.pk: m for m in messages if m.role == "assistant"}
    for message in replies.values():
        message.memory_tokens = 0
    if replies:
        for message_id, tokens in ReplyMemoryTokens.objects.filter(message_id__in=list(replies)).values_list(
            "message_id", "tokens"
        ):
            replies[message_id].memory_tokens = tokens
