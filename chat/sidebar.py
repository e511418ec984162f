"""The conversation list's groups: pinned conversations on top, the rest under date headings (Today,
Yesterday, Previous 7 days, Previous 30 days, then by month), computed in the viewer's time zone."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from chat.models import Conversation


def date_group(when: datetime, *, now: datetime | None = None) -> str:
    """The heading a conversation last active at `when` is listed under."""
    today = timezone.localtime(now or timezone.now()).date()
    day = timezone.localtime(when).date()
    age = (today - day).days
    if age <= 0:
        return _("Today")
    if age == 1:
        return _("Yesterday")
    if age <= 7:
        return _("Previous 7 days")
    if age <= 30:
        return _("Previous 30 days")
    return date_format(day, "YEAR_MONTH_FORMAT")


def with_headings(conversations: Iterable[Conversation], *, previous: str = "") -> list[Conversation]:
    """The conversations, each first one of its date group carrying `group_heading` (the heading to show
    before it); `previous` is the group the list above ended with (a "Show more" page continues it)."""
    items = list(conversations)
    now = timezone.now()
    for conversation in items:
        group = date_group(conversation.updated_at, now=now)
        conversation.group = group  # type: ignore[attr-defined]
        conversation.group_heading = group if group != previous else ""  # type: ignore[attr-defined]
        previous = group
    return items
