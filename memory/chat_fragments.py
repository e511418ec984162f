"""Memory's HTML in the chat pages: the "Memory updated" notice, the poller that brings notices and the
open conversation's new markers, and the conversation page's block that holds it. memory.notices decides
what a notice says and when it goes; these render it (one template each, under memory/templates/memory/).

Apart from memory/fragments.py (the settings page), which reads the recall summary: the notice is
rendered from the extraction task, whose imports must not reach the turn's context provider.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from chat import markers
from chat.fragments import messages_append_html
from chat.models import ConversationMarker
from memory import notice_selectors, selectors
from memory.models import Memory

IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"


def notice_html(*, run_id: int, description: str, review: str = "", suggestions: list[Memory] | None = None) -> str:
    context = {
        "run_id": run_id,
        "description": description,
        "review": review or reverse("memory:page"),
        "suggestions": suggestions or [],
    }
    return render_to_string("memory/_updated_notice.html", context)


def marker_replace_html(marker: ConversationMarker) -> SafeString:
    """A marker that changed, swapped in place of the one the page shows (by its id)."""
    html = markers.marker_html(marker).replace("<p ", '<p hx-swap-oob="true" data-replace ', 1)
    return SafeString(html)


def markers_html(rows: list[ConversationMarker]) -> SafeString:
    """Memory markers, ready to append to the open conversation's timeline."""
    return SafeString("".join(messages_append_html(markers.marker_html(marker)) for marker in rows))


def push_is_cross_process() -> bool:
    """False on the in-memory channel layer, which only reaches consumers of the same process."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    return bool(backend) and backend != IN_MEMORY_LAYER


def notice_poller_html(*, user: Any, conversation_id: str = "") -> str:
    """The chat page's poller for notices (and the open conversation's new markers). Always polling on
    the in-memory channel layer, whose pushes cannot cross processes; on Redis only while the page's
    socket is not live (the channel layer is away, see chat/consumers.py). Empty for anonymous users."""
    if user is None or not user.is_authenticated:
        return ""
    after = notice_selectors.extraction_run_last_changed_id(user=user)
    context = {
        "enabled": True,
        "after": after,
        "with_script": True,
        "offline_only": push_is_cross_process(),
        "conversation_id": conversation_id,
        "marker": notice_selectors.memory_marker_last_id(conversation_id=conversation_id) if conversation_id else 0,
    }
    return render_to_string("memory/_notice_poller.html", context)


def conversation_page_block(context: dict[str, Any]) -> str:
    """The conversation page's "conversation" block (chat.extensions.PAGE_SLOTS, memory/apps.py)."""
    request: HttpRequest | None = context.get("request")
    conversation = context.get("conversation")
    return notice_poller_html(
        user=request.user if request is not None else None,
        conversation_id=str(conversation.pk) if conversation is not None else "",
    )


def project_page_block(context: dict[str, Any]) -> str:
    """The project page's "project" block: the project's active memories, with where to manage them."""
    project = context.get("project")
    if project is None:
        return ""
    memories = list(
        selectors.memories_active(user_id=project.owner_id).filter(project=project).order_by("-created_at")[:50]
    )
    return render_to_string("memory/chat/_project.html", {"project": project, "project_memories": memories})


def project_end_block(context: dict[str, Any]) -> str:
    """The end-a-project page's block: how many memories the project holds."""
    project = context.get("project")
    if project is None:
        return ""
    count = selectors.memories_active(user_id=project.owner_id).filter(project=project).count()
    return render_to_string("memory/chat/_project_end.html", {"project": project, "count": count})
