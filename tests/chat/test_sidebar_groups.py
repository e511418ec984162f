"""The conversation list: pinned conversations on top, the rest under date headings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.models import Conversation
from chat.services import conversation_create
from chat.sidebar import date_group

pytestmark = pytest.mark.django_db


def test_date_groups_name_today_yesterday_the_last_week_month_then_months() -> None:
    now = timezone.now().replace(hour=12)
    assert date_group(now, now=now) == "Today"
    assert date_group(now - timedelta(days=1), now=now) == "Yesterday"
    assert date_group(now - timedelta(days=5), now=now) == "Previous 7 days"
    assert date_group(now - timedelta(days=20), now=now) == "Previous 30 days"
    assert date_group(now.replace(year=now.year - 1), now=now).endswith(str(now.year - 1))


def test_the_list_has_pinned_on_top_and_date_headings(client: Client, user: User) -> None:
    client.force_login(user)
    old = conversation_create(user=user, title="Old trip")
    Conversation.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=3))
    conversation_create(user=user, title="Fresh idea")
    pinned = conversation_create(user=user, title="Pinned plan")
    assert client.post(f"/c/{pinned.pk}/pin/").status_code == 302
    page = client.get("/").content.decode()
    assert page.index("Pinned plan") < page.index(">Today<") < page.index("Fresh idea")
    assert page.index("Fresh idea") < page.index(">Previous 7 days<") < page.index("Old trip")
    assert page.count(">Pinned plan<") == 1
    client.post(f"/c/{pinned.pk}/pin/")
    assert not Conversation.objects.get(pk=pinned.pk).pinned


def test_another_users_conversation_cannot_be_pinned(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    theirs = conversation_create(user=other_user)
    assert client.post(f"/c/{theirs.pk}/pin/").status_code == 404
