"""The admin's usage: the CSV export of the rows sums to what `GET /api/me/usage` answers each user."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from usage.models import DailyUsage
from usage.services import usage_record

pytestmark = pytest.mark.django_db


def test_the_csv_export_matches_the_users_api_totals(
    admin_client: Client, api_client: Client, user: User, other_user: User, settings: Any
) -> None:
    settings.MODEL_PRICES = {"m": {"input": 2, "output": 4}}
    for who, kind, prompt, completion in [
        (user, "chat", 1000, 10),
        (user, "judge", 500, 5),
        (other_user, "chat", 70, 7),
    ]:
        usage_record(user_id=who.pk, project_id=None, model="m", kind=kind, prompt_tokens=prompt,
                     completion_tokens=completion, estimated=False, day=date(2026, 3, 3))  # fmt: skip

    response = admin_client.post(
        "/admin/usage/dailyusage/",
        {"action": "export_csv", "_selected_action": list(DailyUsage.objects.values_list("pk", flat=True))},
    )

    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    mine = [r for r in rows if r["user"] == user.get_username()]
    api = api_client.get("/api/me/usage", {"from": "2026-03-01", "to": "2026-03-31"}).json()["totals"]
    assert sum(int(r["prompt_tokens"]) for r in mine) == api["prompt_tokens"] == 1500
    assert sum(int(r["completion_tokens"]) for r in mine) == api["completion_tokens"] == 15
    assert sum(Decimal(r["cost"]) for r in mine) == Decimal(api["cost"])
    assert len(rows) == 3  # every user's rows, for the admin


def test_the_admin_lists_usage_by_month(admin_client: Client, user: User) -> None:
    usage_record(user_id=user.pk, project_id=None, model="m", kind="chat", prompt_tokens=1, completion_tokens=1,
                 estimated=False, day=date(2026, 3, 3))  # fmt: skip

    page = admin_client.get("/admin/usage/dailyusage/", {"day__year": "2026", "day__month": "3"})

    assert page.status_code == 200 and user.get_username() in page.content.decode()
