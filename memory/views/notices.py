"""The chat page's poll for "Memory updated" notices and the conversation's markers (memory.notices)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.models import User
from core.http import HttpRequest
from memory import chat_fragments, notice_selectors, notices


@require_GET
def memory_notices(request: HttpRequest) -> HttpResponse:
    """The chat page's poll for "Memory updated" notices (see memory.notices), from run `after` on."""
    if not isinstance(request.user, User):
        # The poller stops (htmx stops polling on 286) rather than swap a login page into the chat.
        return HttpResponse(status=286) if request.htmx else redirect_to_login(request.get_full_path())
    user = request.user
    try:
        after = int(request.GET.get("after", ""))
    except ValueError:  # no position yet: start from now rather than replay old runs
        after = notice_selectors.extraction_run_last_changed_id(user=user)
    items, last = notices.notices_after(user=user, after_run_id=after)
    context: dict[str, Any] = {
        "enabled": True,
        "after": last,
        "notices": items,
        "offline_only": chat_fragments.push_is_cross_process(),
    }
    conversation_id = request.GET.get("conversation", "")
    if conversation_id and _is_uuid(conversation_id):
        try:
            marker = int(request.GET.get("marker", ""))
        except ValueError:
            marker = notice_selectors.memory_marker_last_id(conversation_id=conversation_id)
        html, marker = notices.markers_after(user=user, conversation_id=conversation_id, after_marker_id=marker)
        context.update(conversation_id=conversation_id, marker=marker, markers=html)
    return render(request, "memory/_notice_poller.html", context)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
