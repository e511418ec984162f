"""The admin's view of usage: every user's daily rows (sortable, by month, by kind), their CSV, the price
table that wins over MODEL_PRICES, and per-user monthly token quotas."""

from __future__ import annotations

import csv
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _

from usage.models import DailyUsage, ModelPrice, UserQuota
from usage.selectors import prices

CSV_COLUMNS = ["user", "day", "project_id", "model", "kind", "calls", "prompt_tokens", "completion_tokens",
               "estimated_tokens", "cost"]  # fmt: skip


@admin.action(description=_("Export the selected rows as CSV"))
def export_csv(modeladmin: Any, request: HttpRequest, queryset: QuerySet[DailyUsage]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="usage.csv"'
    table = prices()
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for row in queryset.select_related("user").order_by("day", "user__username", "kind", "model"):
        price = table.get(row.model)
        cost = price.cost(row.prompt_tokens, row.completion_tokens) if price else ""
        writer.writerow([row.user.get_username(), row.day.isoformat(), row.project_id or "", row.model, row.kind,
                         row.calls, row.prompt_tokens, row.completion_tokens, row.estimated_tokens, cost])  # fmt: skip
    return response


@admin.register(DailyUsage)
class DailyUsageAdmin(admin.ModelAdmin):
    list_display = ("day", "user", "kind", "model", "project_key", "calls", "prompt_tokens", "completion_tokens",
                    "estimated_tokens")  # fmt: skip
    list_filter = ("kind", "model")
    date_hierarchy = "day"  # by year, month, day
    search_fields = ("user__username", "user__email", "model")
    list_select_related = ("user",)
    actions = [export_csv]
    ordering = ("-day", "user__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # counted from provider calls only

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    list_display = ("model", "input", "output")
    search_fields = ("model",)


@admin.register(UserQuota)
class UserQuotaAdmin(admin.ModelAdmin):
    list_display = ("user", "monthly_tokens")
    search_fields = ("user__username", "user__email")
    autocomplete_fields = ("user",)
