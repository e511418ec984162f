"""The "Memory updated" notice in the open conversation, after a run changed the user's memories.

Two ways to the browser:

- Push: `on_memories_changed` (connected to memory.signals.memories_changed, sent on commit) renders
  the notice and hands it to chat's notice channel (chat.extensions.notify_user), which appends it to
  the notices of the user's open chat pages. On Redis this works from any process (web or worker).
- Poll: the in-memory channel layer of the embedded defaults cannot reach the web process from the
  Celery worker, so there the chat page also polls `notices/` (memory/_notice_poller.html) for runs
  that changed memories since the last one it saw. Each notice carries its run id, so a page that
  gets one run both ways shows it once (static/js/memory.js).

Its Review link goes to the changed memory on Settings → Memory (`review_link`), which highlights it.
The conversation the run learned from also keeps a lasting marker where the memory changed
(`mark_conversation`, through chat's conversation markers).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy, ngettext

from accounts.middleware import background_language
from accounts.models import User
from chat import extensions, markers
from chat.models import Message
from memory import selectors
from memory.changes import MemoryChange
from memory.models import ExtractionRun, Memory

logger = logging.getLogger(__name__)

SHOWN_ITEMS = 2
CONTENT_CHARS = 60
IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"

# What the notice says for each kind of change.
PHRASES = {
    "add": gettext_lazy("remembered %(memory)s"),
    "update": gettext_lazy("updated %(memory)s"),
    "retract": gettext_lazy("forgot %(memory)s"),
}


def _quote(content: str) -> str:
    text = " ".join(content.split())
    if len(text) > CONTENT_CHARS:
        text = text[: CONTENT_CHARS - 1].rstrip() + "…"
    return f"“{text}”"


def _phrase(change: MemoryChange) -> str:
    if change.kind == "clear":
        return gettext("forgot everything")
    return PHRASES[change.kind] % {"memory": _quote(change.content)}


def describe(changes: list[MemoryChange]) -> str:
    """ "remembered “Prefers small phones…”, forgot “Lives in Paris” and 1 more change." """
    phrases = [_phrase(change) for change in changes]
    shown, rest = phrases[:SHOWN_ITEMS], len(phrases) - SHOWN_ITEMS
    text = gettext(", ").join(shown) if shown else gettext("your memories changed")
    if rest > 0:
        return ngettext("%(changes)s and %(count)d more change.", "%(changes)s and %(count)d more changes.", rest) % {
            "changes": text,
            "count": rest,
        }
    return gettext("%(changes)s.") % {"changes": text}


MARKER_KIND = "memory"


def review_link(*, new_memory_id: int | None, applied_ops: list[dict[str, Any]]) -> str:
    """Settings → Memory at the changed memory: the one the run added or updated, else the first one
    it forgot (now in History), else the History."""
    page = reverse("memory:page")
    if new_memory_id is not None:
        return f"{page}#memory-{new_memory_id}"
    retracted = [op["id"] for op in applied_ops if op.get("op") == "retract" and "id" in op]
    return f"{page}#memory-{retracted[0]}" if retracted else f"{page}#memory-history"


def _new_memory_ids(run_ids: list[int]) -> dict[int, int]:
    """The newest still-active memory each run wrote, by run id (one query)."""
    rows = Memory.objects.filter(run_id__in=run_ids, invalid_at__isnull=True).order_by("id").values_list("run_id", "pk")
    return {run_id: pk for run_id, pk in rows if run_id is not None}


def _review_for(run_id: int) -> str:
    """The run's Review link; "" (the page itself) when it cannot be worked out."""
    try:
        run = ExtractionRun.objects.filter(pk=run_id).only("applied_ops").first()
        if run is None:
            return ""
        return review_link(new_memory_id=_new_memory_ids([run_id]).get(run_id), applied_ops=run.applied_ops)
    except Exception:  # a plainer link, never a missed notice
        logger.exception("could not find what run %s changed", run_id)
        return ""


def notice_html(*, run_id: int, changes: list[MemoryChange], review: str = "") -> str:
    context = {"run_id": run_id, "description": describe(changes), "review": review or reverse("memory:page")}
    return render_to_string("memory/_updated_notice.html", context)


def _marker_item(change: MemoryChange) -> str:
    if change.kind == "retract":
        return gettext("Forgot %(memory)s") % {"memory": _quote(change.content)}
    text = gettext("Forgot everything") if change.kind == "clear" else " ".join(change.content.split())
    return text if len(text) <= CONTENT_CHARS else text[: CONTENT_CHARS - 1].rstrip() + "…"


def marker_text(changes: list[MemoryChange]) -> str:
    """ "Memory updated · Prefers small phones, finds them easier to use… · Is vegetarian (and 1 more)" """
    shown, rest = changes[:SHOWN_ITEMS], len(changes) - SHOWN_ITEMS
    text = " · ".join([gettext("Memory updated"), *(_marker_item(change) for change in shown)])
    return text + (gettext(" (and %(count)d more)") % {"count": rest} if rest > 0 else "")


def mark_conversation(sender: object, *, user_id: int, run_id: int, changes: list[MemoryChange], **kwargs: Any) -> None:
    """memories_changed receiver: a lasting marker in the conversation of the message the run ended on."""
    try:
        run = ExtractionRun.objects.filter(pk=run_id, owner_id=user_id).first()
        if run is None:
            return
        message_id = run.trigger_message_id or max(run.message_ids or [0])
        message = Message.objects.filter(pk=message_id, user_id=user_id).select_related("conversation", "user").first()
        if message is None:  # its conversation was deleted meanwhile
            return
        link = review_link(new_memory_id=_new_memory_ids([run.pk]).get(run.pk), applied_ops=run.applied_ops)
        # A marker is kept, written once: in the user's language setting (no browser to ask here).
        with translation.override(background_language(message.user)):
            markers.marker_add(
                conversation=message.conversation,
                kind=MARKER_KIND,
                text=marker_text(changes),
                link=link,
                link_text=gettext("Review"),
            )
    except Exception:  # memories are saved; a missing marker must not fail the run that sent it
        logger.exception("could not mark the conversation of run %s", run_id)


def on_memories_changed(
    sender: object, *, user_id: int, run_id: int, changes: list[MemoryChange], **kwargs: Any
) -> None:
    """memories_changed receiver: push the notice to the user's open chat pages."""
    review = _review_for(run_id)
    # Rendered in each language: every open page shows the one it speaks (its user's setting or browser).
    rendered = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            rendered[code] = notice_html(run_id=run_id, changes=changes, review=review)
    html = rendered.get(settings.LANGUAGE_CODE) or next(iter(rendered.values()))
    try:
        extensions.notify_user(user_id, html, translations=rendered)
    except Exception:  # memories are saved; a missed notice must not fail the run that sent it
        logger.exception("could not push the memory notice of run %s", run_id)


# --- the polling fallback ------------------------------------------------------------------------


def push_is_cross_process() -> bool:
    """False on the in-memory channel layer, which only reaches consumers of the same process."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    return bool(backend) and backend != IN_MEMORY_LAYER


def run_changes(run: ExtractionRun, *, retracted: dict[int, str]) -> list[MemoryChange]:
    """The changes of a finished run, rebuilt from its applied operations (`retracted`: the forgotten
    memories' sentences by id). The record keeps no new memory ids, so adds and updates have none."""
    changes: list[MemoryChange] = []
    for op in run.applied_ops:
        kind = op.get("op")
        if kind == "clear":
            changes.append(MemoryChange("clear"))
        elif kind == "retract":
            memory_id = op.get("id", 0)
            changes.append(MemoryChange("retract", memory_id=memory_id, content=retracted.get(memory_id, "a memory")))
        elif kind == "add":
            changes.append(MemoryChange("add", content=op.get("content", "")))
        elif kind == "update":
            changes.append(MemoryChange("update", content=op.get("content", ""), previous_id=op.get("id")))
    return changes


def notices_after(*, user: User, after_run_id: int) -> tuple[list[str], int]:
    """Rendered notices for the user's runs that changed memories after `after_run_id`, and the
    id to ask from next time. Four queries at most, whatever the number of runs."""
    runs = selectors.extraction_runs_changed_after(user=user, after_run_id=after_run_id)
    ids = [op["id"] for run in runs for op in run.applied_ops if op.get("op") == "retract" and "id" in op]
    retracted = selectors.memory_contents_by_id(user=user, ids=ids)
    new_ids = _new_memory_ids([run.pk for run in runs]) if runs else {}
    notices = [
        notice_html(
            run_id=run.pk,
            changes=run_changes(run, retracted=retracted),
            review=review_link(new_memory_id=new_ids.get(run.pk), applied_ops=run.applied_ops),
        )
        for run in runs
    ]
    return notices, max([after_run_id, *(run.pk for run in runs)])


def notice_poller_html(*, user: Any) -> str:
    """The chat page's poller for notices. Always polling on the in-memory channel layer, whose pushes
    cannot cross processes; on Redis only while the page's socket is not live (the channel layer is
    away, see chat/consumers.py). Empty for anonymous users."""
    if user is None or not user.is_authenticated:
        return ""
    after = selectors.extraction_run_last_changed_id(user=user)
    context = {"enabled": True, "after": after, "with_script": True, "offline_only": push_is_cross_process()}
    return render_to_string("memory/_notice_poller.html", context)


def conversation_page_block(context: dict[str, Any]) -> str:
    """The conversation page's "conversation" block (chat.extensions.PAGE_SLOTS, memory/apps.py)."""
    request: HttpRequest | None = context.get("request")
    return notice_poller_html(user=request.user if request is not None else None)
