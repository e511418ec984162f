"""Template filters for the memory page."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy as _

from chat.models import Message
from memory import selectors
from memory.models import Memory

register = template.Library()

ORIGINS = {
    Memory.Origin.EXTRACTED: _("Learned from chat"),
    Memory.Origin.USER: _("Added by you"),
    Memory.Origin.RESTORED: _("Restored by you"),
}
REASONS = {
    Memory.InvalidReason.UPDATED: _("Updated from a later message"),
    Memory.InvalidReason.RETRACTED: _("Forgotten when you asked"),
    Memory.InvalidReason.CLEARED: _("Cleared when everything was forgotten"),
    Memory.InvalidReason.EDITED: _("Edited by you"),
    Memory.InvalidReason.REPLACED: _("Replaced when you restored an older version"),
}


@register.filter
def origin_label(memory: Memory) -> str:
    # An edit is stored as a new row added by the user that supersedes the old one.
    if memory.origin == Memory.Origin.USER and getattr(memory, "supersedes_id", None):
        return str(_("Edited by you"))
    if memory.origin == Memory.Origin.CLIENT and memory.client:
        return str(_("Proposed by %(client)s") % {"client": memory.client})
    return str(ORIGINS.get(memory.origin, memory.get_origin_display()))  # type: ignore[call-overload]


@register.filter
def reason_label(memory: Memory) -> str:
    return str(REASONS.get(memory.invalid_reason, memory.get_invalid_reason_display() or _("No longer used")))  # type: ignore[call-overload]


@register.filter
def excerpt(message: Message) -> str:
    return selectors.source_excerpt(message)


@register.inclusion_tag("memory/_tidy.html", takes_context=True)
def tidy_section(context: template.Context) -> dict[str, object]:
    """Settings → Memory's "Tidy-up suggestions": the estimate, the waiting suggestions (before and after,
    with sources) and the accepted ones that can still be undone."""
    from memory.consolidation.candidates import user_clusters
    from memory.consolidation.selectors import proposals_shown

    user = context["request"].user
    shown = proposals_shown(user=user)
    return {
        "waiting": [p for p in shown if p["status"] == "pending"],
        "accepted": [p for p in shown if p["status"] == "accepted"][:10],
        "estimate": len(user_clusters(user_id=user.pk)),
        "csrf_token": context.get("csrf_token"),
    }
