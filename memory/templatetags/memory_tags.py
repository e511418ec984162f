"""Template filters for the memory page."""

from __future__ import annotations

from django import template

from chat.models import Message
from memory import selectors
from memory.models import Memory

register = template.Library()

ORIGINS = {
    Memory.Origin.EXTRACTED: "Learned from chat",
    Memory.Origin.USER: "Added by you",
    Memory.Origin.RESTORED: "Restored by you",
}
REASONS = {
    Memory.InvalidReason.UPDATED: "Updated from a later message",
    Memory.InvalidReason.RETRACTED: "Forgotten when you asked",
    Memory.InvalidReason.CLEARED: "Cleared when everything was forgotten",
    Memory.InvalidReason.EDITED: "Edited by you",
    Memory.InvalidReason.REPLACED: "Replaced when you restored an older version",
}


@register.filter
def origin_label(memory: Memory) -> str:
    # An edit is stored as a new row added by the user that supersedes the old one.
    if memory.origin == Memory.Origin.USER and getattr(memory, "supersedes_id", None):
        return "Edited by you"
    return ORIGINS.get(memory.origin, memory.get_origin_display())  # type: ignore[call-overload]


@register.filter
def reason_label(memory: Memory) -> str:
    return REASONS.get(memory.invalid_reason, memory.get_invalid_reason_display() or "No longer used")  # type: ignore[call-overload]


@register.filter
def excerpt(message: Message) -> str:
    return selectors.source_excerpt(message)
