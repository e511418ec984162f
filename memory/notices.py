"""The "Memory updated" notice in the open conversation, after a run changed the user's memories.

Two ways to the browser:

- Push: `on_memories_changed` (connected to memory.signals.memories_changed, sent on commit) renders
  the notice and hands it to chat's notice channel (chat.extensions.notify_user), which appends it to
  the notices of the user's open chat pages. On Redis this works from any process (web or worker).
- Poll: the in-memory channel layer of the embedded defaults cannot reach the web process from the
  Celery worker, so there the chat page also polls `notices/` (memory/_notice_poller.html) for runs
  that changed memories since the last one it saw. Each notice carries its run id, so a page that
  gets one run both ways shows it once (static/js/memory.js).

Its Review link goes to the changed memories on Settings → Memory (`review_link`): the page highlights
every one it names and moves focus to the first. A learned memory waiting for the user (a suggestion,
SPEC §8) is shown as "Memora would like to remember …" with Keep and Discard, in the notice, and the
marker says so and links to it. The conversation the run learned from also keeps a lasting marker
where the memory changed (`mark_conversation`, through chat's conversation markers); on the embedded
channel layer, whose pushes cannot leave the worker, the poll brings the open conversation's new
markers too (`markers_after`), so the marker shows at once, not after a reload.

This module decides what is said and when; the HTML is rendered in memory/chat_fragments.py and the
rows are read through memory.selectors.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy, ngettext

from accounts.middleware import background_language
from accounts.models import User
from chat import extensions, markers
from memory import chat_fragments, notice_selectors, selectors
from memory.changes import MARKER_KIND, MemoryChange
from memory.extraction.outcomes import Outcome, Result
from memory.models import ExtractionRun, Memory

logger = logging.getLogger(__name__)

SHOWN_ITEMS = 2
CONTENT_CHARS = 60

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
    """ "remembered “Prefers small phones…”, forgot “Lives in Paris” and 1 more change"; suggestions are
    not changes yet (the notice lists them with Keep and Discard), so "" when there is nothing else."""
    changes = [change for change in changes if not change.suggested]
    if not changes:
        return ""
    phrases = [_phrase(change) for change in changes]
    shown, rest = phrases[:SHOWN_ITEMS], len(phrases) - SHOWN_ITEMS
    text = gettext(", ").join(shown) if shown else gettext("your memories changed")
    if rest > 0:
        return ngettext("%(changes)s and %(count)d more change.", "%(changes)s and %(count)d more changes.", rest) % {
            "changes": text,
            "count": rest,
        }
    return gettext("%(changes)s.") % {"changes": text}


def review_link(*, new_memory_id: int | None, applied_ops: list[dict[str, Any]], ids: list[int] | None = None) -> str:
    """Settings → Memory at the changed memories: every memory the run wrote (`ids`, or the one
    `new_memory_id`), else the ones it forgot (now in History), else the History. Several memories are
    named in `?review=` (the page highlights them all) and the first in the fragment (focus goes there)."""
    page = reverse("memory:page")
    named = list(ids or ([new_memory_id] if new_memory_id is not None else []))
    if not named:
        named = [op["id"] for op in applied_ops if op.get("op") == "retract" and "id" in op]
    if not named:
        return f"{page}#memory-history"
    if len(named) == 1:
        return f"{page}#memory-{named[0]}"
    return f"{page}?review={','.join(str(pk) for pk in named)}#memory-{named[0]}"


def _waiting_for(run_id: int) -> list[Memory]:
    """The run's suggestions for the notice's Keep and Discard; none when they cannot be read."""
    try:
        return notice_selectors.memory_suggestions_by_run(run_ids=[run_id]).get(run_id, [])
    except Exception:  # the notice without buttons (the page lists the suggestions), never a missed notice
        logger.exception("could not read the suggestions of run %s", run_id)
        return []


def _review_for(run_id: int) -> str:
    """The run's Review link; "" (the page itself) when it cannot be worked out."""
    try:
        run = notice_selectors.extraction_run_applied_ops(run_id=run_id)
        if run is None:
            return ""
        written = notice_selectors.memory_ids_written_by_runs(run_ids=[run_id]).get(run_id)
        return review_link(new_memory_id=None, applied_ops=run.applied_ops, ids=written)
    except Exception:  # a plainer link, never a missed notice
        logger.exception("could not find what run %s changed", run_id)
        return ""


def _marker_item(change: MemoryChange) -> str:
    if change.kind == "retract":
        return gettext("Forgot %(memory)s") % {"memory": _quote(change.content)}
    text = gettext("Forgot everything") if change.kind == "clear" else " ".join(change.content.split())
    if change.suggested:
        return gettext("Memora would like to remember %(memory)s") % {"memory": _quote(text)}
    return text if len(text) <= CONTENT_CHARS else text[: CONTENT_CHARS - 1].rstrip() + "…"


def marker_excerpts(content: str) -> list[str]:
    """Every way a marker may show `content` (memory.forgetting redacts them all when it is deleted):
    quoted for a retract, bare for an add or update, whole or shortened."""
    add = _marker_item(MemoryChange("add", content=content))
    return list(dict.fromkeys([_quote(content), add, " ".join(content.split())]))


def marker_text(changes: list[MemoryChange]) -> str:
    """ "Memory updated · Prefers small phones, finds them easier to use… · Is vegetarian (and 1 more)";
    only suggestions: "Memora would like to remember “…”"."""
    return _marker_line(changes[:SHOWN_ITEMS], len(changes) - SHOWN_ITEMS)


def _marker_line(shown: list[MemoryChange], rest: int) -> str:
    lead = [] if all(change.suggested for change in shown) else [gettext("Memory updated")]
    text = " · ".join([*lead, *(_marker_item(change) for change in shown)])
    more = ngettext(" (and %(count)d more)", " (and %(count)d more)", rest) % {"count": rest} if rest > 0 else ""
    return text + more


def marker_data(changes: list[MemoryChange], *, deleted: set[int] | None = None) -> dict[str, Any]:
    """What a marker keeps so it can be worded in its reader's language (`marker_wording`): the changes
    it shows (without the text of the `deleted` memories) and how many more there were."""
    items = []
    for change in changes[:SHOWN_ITEMS]:
        gone = change.memory_id is not None and change.memory_id in (deleted or set())
        item: dict[str, Any] = {"kind": change.kind, "content": "" if gone else change.content}
        if change.suggested:
            item["suggested"] = True
            item["id"] = change.memory_id  # Keep turns it into a change (`marker_suggestion_kept`)
        if gone:
            item["deleted"] = True
        items.append(item)
    return {"changes": items, "more": max(len(changes) - SHOWN_ITEMS, 0)}


def marker_wording(data: dict[str, Any]) -> tuple[str, str]:
    """A memory marker's (text, link text) in the active language (chat.marker_kinds calls it)."""
    if "outcome" in data:
        return _outcome_wording(str(data["outcome"])), ""
    shown = [
        MemoryChange(
            item["kind"],
            content=gettext("(deleted)") if item.get("deleted") else str(item.get("content", "")),
            suggested=bool(item.get("suggested")),
        )
        for item in data["changes"]
    ]
    return _marker_line(shown, int(data.get("more", 0))), gettext("Review")


def _kept(memory_id: int, items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """A marker's changes with the suggestion of `memory_id` now remembered; None when it asked nothing
    about it."""
    if not any(item.get("id") == memory_id and item.get("suggested") for item in items):
        return None
    return [
        {key: value for key, value in item.items() if key not in ("suggested", "id")}
        if item.get("id") == memory_id
        else item
        for item in items
    ]


def marker_suggestion_kept(*, user_id: int, memory_id: int) -> list[Any]:
    """After Keep: the markers that asked about the suggestion now say it was remembered (the reader's
    language still decides the wording). Returns the markers changed, to show them at once."""
    changed = []
    for marker in notice_selectors.memory_markers_of_user(user_id=user_id):
        items = _kept(memory_id, (marker.data or {}).get("changes") or [])
        if items is None:
            continue
        marker.data = {**marker.data, "changes": items}
        with translation.override(background_language(marker.conversation.owner)):
            marker.text, marker.link_text = marker_wording(marker.data)
        marker.save(update_fields=["data", "text", "link_text"])
        changed.append(marker)
    return changed


def _deleted_since(changes: list[MemoryChange]) -> set[int]:
    """The memories of `changes` deleted since the run committed (the marker is written after commit:
    it re-checks, SPEC §8); the marker keeps none of their text."""
    ids = {change.memory_id for change in changes if change.memory_id is not None}
    return ids - set(selectors.memory_ids_existing(ids=ids))


def mark_conversation(sender: object, *, user_id: int, run_id: int, changes: list[MemoryChange], **kwargs: Any) -> None:
    """memories_changed receiver: a lasting marker in the conversation of the message the run ended on."""
    try:
        run = notice_selectors.extraction_run_of_user(user_id=user_id, run_id=run_id)
        if run is None:
            return
        message_id = run.trigger_message_id or max(run.message_ids or [0])
        message = notice_selectors.message_of_user(user_id=user_id, message_id=message_id)
        if message is None:  # its conversation was deleted meanwhile
            return
        written = notice_selectors.memory_ids_written_by_runs(run_ids=[run.pk]).get(run.pk)
        link = review_link(new_memory_id=None, applied_ops=run.applied_ops, ids=written)
        # Kept as data, worded in each reader's language when shown (marker_wording); the text, in the
        # user's language setting, is only the fallback.
        data = marker_data(changes, deleted=_deleted_since(changes))
        with translation.override(background_language(message.user)):
            text, link_text = marker_wording(data)
            markers.marker_add(
                conversation=message.conversation,
                kind=MARKER_KIND,
                text=text,
                link=link,
                link_text=link_text,
                data=data,
            )
    except Exception:  # memories are saved; a missing marker must not fail the run that sent it
        logger.exception("could not mark the conversation of run %s", run_id)


def on_memories_changed(
    sender: object, *, user_id: int, run_id: int, changes: list[MemoryChange], **kwargs: Any
) -> None:
    """memories_changed receiver: push the notice to the user's open chat pages."""
    review, suggestions = _review_for(run_id), _waiting_for(run_id)
    # Rendered in each language: every open page shows the one it speaks (its user's setting or browser).
    rendered = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            rendered[code] = chat_fragments.notice_html(
                run_id=run_id, description=describe(changes), review=review, suggestions=suggestions
            )
    html = rendered.get(settings.LANGUAGE_CODE) or next(iter(rendered.values()))
    try:
        extensions.notify_user(user_id, html, translations=rendered)
    except Exception:  # memories are saved; a missed notice must not fail the run that sent it
        logger.exception("could not push the memory notice of run %s", run_id)


# --- the outcome of an explicit request the chat model could not flush ------------------------------


def outcome_text(result: Result) -> str:
    """What the conversation says when an explicit request changed nothing (a change has its own marker)."""
    return _outcome_wording(result.status)


def _outcome_wording(status: str) -> str:
    if status == Outcome.APPLIED:
        return gettext("Memory checked: nothing from this message was remembered.")
    if status == Outcome.ABANDONED:
        return gettext("Your memories changed meanwhile, so nothing from this message was remembered.")
    if status in (Outcome.BUSY, Outcome.BACKING_OFF):
        return gettext("Not remembered yet: memory is busy and will review this message shortly.")
    if status == Outcome.FAILED:
        return gettext("Not remembered: the memory model's answer could not be used. It will try again shortly.")
    if status == Outcome.DROPPED:
        return gettext("Not remembered: the memory model's answers could not be used, three times in a row.")
    if status == Outcome.UNAVAILABLE:
        return gettext(
            "Not remembered yet: the model server did not answer in time. This message waits and will be "
            "reviewed once it does."
        )
    return gettext("Memory could not be updated this time: nothing from this message was remembered.")


def announce_outcome(*, user_id: int, message_id: int, result: Result) -> None:
    """After a flush run for an explicit request without tools: a marker in the message's conversation
    when nothing changed (changes announce themselves: `mark_conversation` and the notice)."""
    if result.changed or result.status in (Outcome.MEMORY_OFF, Outcome.NOTHING_PENDING, Outcome.BELOW_THRESHOLD):
        return
    message = notice_selectors.message_of_user(user_id=user_id, message_id=message_id)
    if message is None:  # the conversation was deleted meanwhile
        return
    markers.marker_add(
        conversation=message.conversation,
        kind=MARKER_KIND,
        text=outcome_text(result),
        data={"outcome": result.status},
    )


# --- the polling fallback ------------------------------------------------------------------------


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
            content = retracted.get(memory_id) or gettext("a memory")
            changes.append(MemoryChange("retract", memory_id=memory_id, content=content))
        elif kind == "add":
            changes.append(MemoryChange("add", content=op.get("content", ""), suggested=bool(op.get("suggested"))))
        elif kind == "update":
            suggested = bool(op.get("suggested"))
            changes.append(
                MemoryChange("update", content=op.get("content", ""), previous_id=op.get("id"), suggested=suggested)
            )
    return changes


def notices_after(*, user: User, after_run_id: int) -> tuple[list[str], int]:
    """Rendered notices for the user's runs that changed memories after `after_run_id`, and the
    id to ask from next time. Four queries at most, whatever the number of runs."""
    runs = notice_selectors.extraction_runs_changed_after(user=user, after_run_id=after_run_id)
    if not runs:
        return [], after_run_id
    ids = [op["id"] for run in runs for op in run.applied_ops if op.get("op") == "retract" and "id" in op]
    retracted = notice_selectors.memory_contents_by_id(user=user, ids=ids)
    written = notice_selectors.memory_ids_written_by_runs(run_ids=[run.pk for run in runs])
    waiting = notice_selectors.memory_suggestions_by_run(run_ids=[run.pk for run in runs])
    notices = [
        chat_fragments.notice_html(
            run_id=run.pk,
            description=describe(run_changes(run, retracted=retracted)),
            review=review_link(new_memory_id=None, applied_ops=run.applied_ops, ids=written.get(run.pk)),
            suggestions=waiting.get(run.pk),
        )
        for run in runs
    ]
    return notices, max([after_run_id, *(run.pk for run in runs)])


def markers_after(*, user: User, conversation_id: str, after_marker_id: int) -> tuple[str, int]:
    """The open conversation's memory markers newer than `after_marker_id`, ready to append to its
    timeline, and the id to ask from next time (the poll's way to show a marker the worker added)."""
    rows = notice_selectors.memory_markers_after(
        user=user, conversation_id=conversation_id, after_marker_id=after_marker_id
    )
    return chat_fragments.markers_html(rows), max([after_marker_id, *(marker.pk for marker in rows)])
