"""The conversation list in the sidebar, and how open pages follow its changes.

Its order, top to bottom (docs/sidebar.md):
- **Pinned**: the pinned conversations, most recently active first, whatever their project.
- **Projects**: each project (by name) with its newest conversations, most recently active first.
- The rest under date headings, newest first: Today, Yesterday, Previous 7 days, Previous 30 days,
  then one heading per month, computed in the viewer's time zone.
The filter box narrows all three to the conversations whose title holds what is typed.

A rename, a pin, a move, a deletion or a title an edit gives again changes the list of every open page of
the user, not only the one it was made in: `sidebar_changed` tells them (chat.push), and each page fetches
its list (and, on the conversation's own page, its title) again with its own filter, language and open
conversation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from chat import push
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
    before it); `previous` is the group the list above ended with (a "Show more" page continues it). The
    Today heading is marked: a conversation that becomes active goes right under it (chat/_turn_start.html)."""
    items = list(conversations)
    now = timezone.now()
    today = _("Today")
    for conversation in items:
        group = date_group(conversation.updated_at, now=now)
        conversation.group = group  # type: ignore[attr-defined]
        conversation.group_heading = group if group != previous else ""  # type: ignore[attr-defined]
        conversation.group_is_today = group == today  # type: ignore[attr-defined]
        previous = group
    return items


def sidebar_changed(*, conversation: Conversation) -> None:
    """Tell every open chat page of the owner that `conversation` changed its title or its place in the
    list (called by the services that do it; sent after commit; missed, a page shows it on its next load)."""
    event = {"type": "chat.sidebar", "conversation_id": str(conversation.pk)}
    owner_id = conversation.owner_id
    transaction.on_commit(lambda: push.send_event(event, user_id=owner_id))


def sync_html(*, current: Conversation, title: bool) -> str:
    """What a page open on `current` is sent for `sidebar_changed`: requests, made at once, for its list
    (with its filter) and, when `title`, for its title (chat/_sidebar_sync.html)."""
    return render_to_string("chat/_sidebar_sync.html", {"current": current, "title": title})
