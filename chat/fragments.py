"""Chat's HTML fragments: every piece of markup the chat pushes or answers outside a full page.

Each one renders a partial under chat/templates/chat/ (the same partials the page renders, so the live
page always equals a reload). The WebSocket pushes (chat/consumers.py, chat/turn/runner.py) and the HTMX
answers (chat/views.py) all come through here; the runner renders each event once, whatever the number
of tabs.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from chat import extensions
from chat.models import Conversation, ConversationMarker, Message
from chat.selectors import SummaryDivider
from chat.turn.compaction import SUMMARIZING
from chat.turn.events import TurnEvent

# What chat itself does while a reply waits (compaction is not a registered tool); a registered tool
# names its own (`activity_label`, see chat.extensions.Tool).
ACTIVITY = {SUMMARIZING: _("Summarizing earlier messages…")}
ACTIVITY_DEFAULT = _("Working…")


def mark_latest(message: Message) -> None:
    """Mark the conversation's latest message for its Retry or Regenerate button (chat/_message.html)."""
    message.retryable = message.offers_retry  # type: ignore[attr-defined]
    message.regeneratable = message.offers_regenerate  # type: ignore[attr-defined]


def message_html(message: Message, *, retryable: bool = False, live: bool = False, oob: bool = False) -> str:
    """The one message partial. `live`: pushed over the WebSocket (no polling while it streams).
    `retryable`: the message is the conversation's latest, so a failed or stopped reply offers Retry."""
    if retryable:
        mark_latest(message)
    return render_to_string("chat/_message.html", {"message": message, "live": live, "oob": oob})


def notice_html(text: str, *, level: str = "info") -> str:
    return render_to_string("chat/_notice.html", {"text": text, "level": level})


def notices_append_html(html: str) -> str:
    """Already-rendered notices (another app's, sent through chat.extensions.notify_user), appended to the
    page's notices area."""
    return render_to_string("chat/_notices_append.html", {"html": SafeString(html)})


def messages_append_html(html: str) -> str:
    """An already-rendered item (a conversation marker), appended to the end of the page's timeline."""
    return render_to_string("chat/_messages_append.html", {"html": SafeString(html)})


def marker_html(marker: ConversationMarker) -> str:
    """A conversation marker (chat.markers), as the timeline shows it."""
    return render_to_string("chat/_marker.html", {"marker": marker})


def turn_state_html(state: str) -> str:
    return render_to_string("chat/_turn_state.html", {"state": state, "oob": True})


def turn_live_html(*, live: bool) -> str:
    """Whether the page's socket follows the conversation's group (live) or polls (the channel layer is away)."""
    return render_to_string("chat/_turn_live.html", {"live": live, "oob": True})


def delta_html(message_id: int, text: str) -> str:
    """A piece of reply text, appended to the streaming text (chat/_streaming_text.html's element).

    A format string rather than a template on purpose: it runs for every streamed piece, once per open
    tab, on the consumer's event loop, where a template render costs many times as much for one span.
    Its text is escaped here exactly as the template would."""
    return f'<span hx-swap-oob="beforeend:#message-{int(message_id)}-text">{escape(text)}</span>'


def text_html(message_id: int, text: str) -> str:
    """The whole text streamed so far, for a page that missed some of it (it joined mid-reply)."""
    return render_to_string("chat/_streaming_text.html", {"message_id": message_id, "text": text, "oob": True})


def activity_label(tool: str) -> str:
    return str(ACTIVITY.get(tool) or extensions.tool_activity_label(tool) or ACTIVITY_DEFAULT)


def activity_html(message_id: int, tool: str) -> str:
    """What the reply is doing while a tool runs (it may take a few seconds)."""
    context = {"message_id": message_id, "text": activity_label(tool), "oob": True}
    return render_to_string("chat/_activity.html", context)


def waiting_html(message_id: int, ahead: int) -> str:
    """The reply waits in the provider's queue (chat.model_queue): how many requests are ahead (0: no
    longer waiting)."""
    text = ""  # 0: the request was sent, the line goes
    if ahead:
        text = ngettext("Waiting for the model (%(n)s ahead)…", "Waiting for the model (%(n)s ahead)…", ahead) % {
            "n": ahead
        }
    return render_to_string("chat/_activity.html", {"message_id": message_id, "text": text, "oob": True})


def start_html(event: TurnEvent, conversation: Conversation, *, retry: bool = False) -> str:
    """The user's message and the empty reply (on a retry: the failed reply, emptied, in its place);
    the conversation moves to the top of the list."""
    assert event.user_message and event.assistant_message
    context = {
        "retry": retry,
        "user_message": event.user_message,
        "assistant_message": event.assistant_message,
        "conversation": conversation,
        "current": conversation,
    }
    return render_to_string("chat/_turn_start.html", context)


def final_html(message: Message) -> str:
    """The saved reply: the latest message, so Retry is offered when it failed or was stopped."""
    return message_html(message, retryable=True, live=True, oob=True) + turn_state_html("idle")


def streaming_html(message: Message) -> str:
    """A reply still being written, as a page that opened mid-reply gets it once its socket is live."""
    return message_html(message, live=True, oob=True) + turn_state_html("streaming")


def summary_divider_html(divider: SummaryDivider) -> str:
    """The "earlier messages were summarized" divider, moved to where the new summary puts it."""
    return render_to_string("chat/_summary_divider_live.html", {"divider": divider})


def messages_removed_html(message_ids: tuple[int, ...]) -> str:
    """Takes messages off the page (an edited message and the replies after it, chat.edits)."""
    return render_to_string("chat/_messages_removed.html", {"message_ids": message_ids})
