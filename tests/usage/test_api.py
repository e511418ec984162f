"""`GET /api/me/usage` (SPEC §9 "Usage"): grouped sums, prices (settings, then the admin's table), tokens only
for an unpriced model, bad input in the one error shape, and nobody else's usage."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from usage.models import ModelPrice
from usage.services import usage_record

pytestmark = pytest.mark.django_db

URL = "/api/me/usage"


def spend(user: User, *, kind: str = "chat", model: str = "gpt-4o-mini", prompt: int = 1000, completion: int = 100,
          day: date = date(2026, 3, 10), project_id: int | None = None, estimated: bool = False) -> None:  # fmt: skip
    usage_record(
        user_id=user.pk,
        project_id=project_id,
        model=model,
        kind=kind,
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated=estimated,
        day=day,
    )


@pytest.fixture
def priced(settings: Any) -> None:
    settings.MODEL_PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}
    settings.PRICE_CURRENCY = "USD"


def test_usage_is_summed_by_kind_and_priced_per_million_tokens(api_client: Client, user: User, priced: None) -> None:
    spend(user, prompt=1_000_000, completion=0)
    spend(user, prompt=0, completion=1_000_000, day=date(2026, 3, 11))
    spend(user, kind="judge", prompt=2_000_000, completion=500_000)

    answer = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31", "group": "kind"}).json()

    rows = {row["kind"]: row for row in answer["rows"]}
    assert rows["chat"]["prompt_tokens"] == 1_000_000 and rows["chat"]["completion_tokens"] == 1_000_000
    assert Decimal(rows["chat"]["cost"]) == Decimal("0.75")  # 0.15 + 0.60
    assert Decimal(rows["judge"]["cost"]) == Decimal("0.6")  # 0.30 + 0.30
    assert rows["chat"]["model"] is None and rows["chat"]["day"] is None  # grouped away
    assert answer["totals"]["prompt_tokens"] == 3_000_000 and Decimal(answer["totals"]["cost"]) == Decimal("1.35")
    assert answer["currency"] == "USD"


def test_the_admins_price_wins_over_the_setting(api_client: Client, user: User, priced: None) -> None:
    ModelPrice.objects.create(model="gpt-4o-mini", input=Decimal("1"), output=Decimal("2"))
    spend(user, prompt=1_000_000, completion=1_000_000)

    answer = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31"}).json()

    assert Decimal(answer["totals"]["cost"]) == Decimal("3")


def test_a_model_without_a_price_shows_tokens_only(api_client: Client, user: User, priced: None) -> None:
    spend(user, model="llama-local", prompt=500, completion=50)

    answer = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31", "group": "model"}).json()

    assert answer["rows"] == [
        {
            "kind": None,
            "model": "llama-local",
            "project_id": None,
            "day": None,
            "prompt_tokens": 500,
            "completion_tokens": 50,
            "estimated": False,
            "cost": None,
        }
    ]
    assert answer["totals"]["cost"] is None


def test_groups_by_project_and_by_day_and_marks_estimates(api_client: Client, user: User) -> None:
    spend(user, project_id=7, estimated=True)
    spend(user, day=date(2026, 3, 12))

    by_project = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31", "group": "project"}).json()["rows"]
    by_day = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31", "group": "day"}).json()["rows"]

    assert [(r["project_id"], r["estimated"]) for r in by_project] == [(None, False), (7, True)]
    assert [(r["day"], r["prompt_tokens"]) for r in by_day] == [("2026-03-10", 1000), ("2026-03-12", 1000)]


def test_the_period_includes_both_ends_and_nothing_outside(api_client: Client, user: User) -> None:
    for day in (date(2026, 2, 28), date(2026, 3, 1), date(2026, 3, 31), date(2026, 4, 1)):
        spend(user, day=day, prompt=1, completion=0)

    answer = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31"}).json()

    assert answer["totals"]["prompt_tokens"] == 2


def test_another_users_usage_is_never_visible(api_client: Client, user: User, other_user: User) -> None:
    spend(other_user, prompt=999, completion=9)

    answer = api_client.get(URL, {"from": "2026-03-01", "to": "2026-03-31"}).json()

    assert answer["rows"] == [] and answer["totals"]["prompt_tokens"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {"from": "2026-03-31", "to": "2026-03-01"},
        {"from": "yesterday"},
        {"group": "user"},
        {"to": "0"},
    ],
)
def test_bad_parameters_answer_422_in_the_error_shape(api_client: Client, user: User, params: dict[str, str]) -> None:
    answer = api_client.get(URL, params)

    assert answer.status_code == 422
    assert isinstance(answer.json()["detail"], str) and answer.json()["detail"]


def test_without_credentials_the_usage_is_refused(client: Client) -> None:
    assert client.get(URL).status_code == 401
