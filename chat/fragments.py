"""HTML fragments pushed to open chat pages over the WebSocket (htmx swaps them in by id).

They wrap the same partials the page renders (chat/_message.html and friends), so the live page always
equals a reload. Rendered once per event by the runner (chat/runner.py), whatever the number of tabs.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from django.utils.html import escape

from chat.agent import TurnEvent
from chat.models import Conversation, Message
from chat.views import message_html

TOOL_ACTIVITY = {"flush_memory": "Updating memory…", "summarize_context": "Summarizing earlier messages…"}


def notice_html(text: str, *, level: str = "info") -> str:
    return render_to_string("chat/_notice.html", {"text": text, "level": level})


def turn_state_html(state: str) -> str:
    return render_to_string("chat/_turn_state.html", {"state": state, "oob": True})


def delta_html(message_id: int, text: str) -> str:
    return f'<span hx-swap-oob="beforeend:#message-{message_id}-text">{escape(text)}</span>'


def text_html(message_id: int, text: str) -> str:
    """The whole text streamed so far, for a page that missed some of it (it joined mid-reply)."""
    return (
        f'<div id="message-{message_id}-text" class="message-text streaming-text" hx-swap-oob="true">'
        f"{escape(text)}</div>"
    )


def activity_html(message_id: int, tool: str) -> str:
    """What the reply is doing while a tool runs (it may take a few seconds)."""
    text = TOOL_ACTIVITY.get(tool, "Working…")
    return f'<p id="message-{message_id}-activity" class="message-activity" hx-swap-oob="true">{escape(text)}</p>'


def start_html(event: TurnEvent, conversation: Conversation, *, retry: bool = False) -> str:
    """The user's message and the empty reply (on a retry: the failed reply, emptied, in its place);
    the conversation moves to the top of the list."""
    assert event.user_message and event.assistant_message
    if retry:
        messages = message_html(event.assistant_message, live=True, oob=True)
    else:
        new = message_html(event.user_message, live=True) + message_html(event.assistant_message, live=True)
        messages = f'<div hx-swap-oob="beforeend:#messages">{new}</div>'
    context = {"conversation": conversation, "current": conversation}
    return (
        messages
        + f'<div id="conversation-{conversation.pk}" hx-swap-oob="delete"></div>'
        '<div hx-swap-oob="afterbegin:#conversation-list">'
        + render_to_string("chat/_conversation_item.html", context)
        + "</div>"
        + render_to_string("chat/_title_oob.html", context)
        + turn_state_html("streaming")
    )


def final_html(message: Message) -> str:
    """The saved reply: the latest message, so Retry is offered when it failed or was stopped."""
    return message_html(message, retryable=True, live=True, oob=True) + turn_state_html("idle")


def streaming_html(message: Message) -> str:
    """A reply still being written, as a page that opened mid-reply gets it once its socket is live."""
    return message_html(message, live=True, oob=True) + turn_state_html("streaming")
