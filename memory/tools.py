"""`flush_memory`: the chat model's way to have the user's recent messages reviewed for memory now.

It takes no parameters on purpose: the model may decide *when* to extract, never *what* is stored.
Who and which messages come from the server-side turn context; what to store is the judge's call,
made from the user's own words only.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.utils.translation import gettext_lazy as _

from chat.extensions import TurnContext
from memory import forgetting, lexicon, notices
from memory.extraction import batches, retries
from memory.extraction.outcomes import Outcome, Result
from memory.models import ExtractionRun
from memory.scopes import learns_here

logger = logging.getLogger(__name__)

DESCRIPTION = (
    "Review the user's recent messages and update their long-term memory now. Call this when the user "
    'states a stable fact or preference about themself (for example "I\'m vegetarian", "I prefer big '
    'screens now"), or asks you to remember, correct or forget something about them. It takes no '
    "arguments: the server decides what to store, from the user's own words. Do not call it for "
    "ordinary questions. Never tell the user that something was remembered, changed or forgotten "
    "unless this tool's result says so."
)

TEMPORARY = "This is a temporary conversation: nothing from it is remembered, so nothing was saved."
MEMORY_OFF = "Memory is switched off for this user, so nothing was saved. They can switch it on in Settings → Memory."
NOTHING_WORTH_KEEPING = (
    "Reviewed the user's recent messages: nothing in them is worth keeping long-term, so nothing was "
    "saved or changed. Do not say that anything was remembered."
)
NOTHING_PENDING = (
    "There were no new messages to review (the recent ones had already been checked), so nothing changed now."
)
BUSY = (
    "Memory is being updated by another request right now, so this message has not been reviewed "
    "yet; it will be reviewed shortly. Nothing is saved yet: do not say that it was remembered."
)
FAILED = (
    "Updating memory failed this time (the memory service could not be reached or answered badly); "
    "nothing was saved or changed. Tell the user it was not remembered."
)
BACKING_OFF = (
    "Updating memory failed a moment ago and is waiting before it tries again, so this message has "
    "not been reviewed yet; it will be shortly. Nothing is saved yet: do not say that it was remembered."
)
UNAVAILABLE = (
    "The memory model did not answer in time (the server is slow, busy or restarting), so this message has "
    "not been reviewed yet; it stays waiting and will be reviewed once the server answers. Nothing is saved "
    "yet: do not say that it was remembered."
)
ABANDONED = (
    "The user's memories changed while their messages were being reviewed, so nothing was saved from this review."
)


# Outcomes that need no marker: the message was covered already, or memory is off (no tool then).
UNMARKED = (Outcome.NOTHING_PENDING, Outcome.BELOW_THRESHOLD, Outcome.MEMORY_OFF)


def result_sentence(result: Result) -> str:
    """One distinct sentence per outcome, for the model to relay truthfully."""
    if result.changed:
        text = "Memory updated. " + " ".join(change.sentence().rstrip(".") + "." for change in result.changes)
        if result.status not in (Outcome.APPLIED, Outcome.NOTHING_PENDING):
            text += " Some of the messages could not be reviewed yet."
        return text
    return {
        Outcome.APPLIED: NOTHING_WORTH_KEEPING,
        Outcome.NOTHING_PENDING: NOTHING_PENDING,
        Outcome.BELOW_THRESHOLD: NOTHING_PENDING,
        Outcome.BUSY: BUSY,
        Outcome.FAILED: FAILED,
        Outcome.DROPPED: FAILED,
        Outcome.ABANDONED: ABANDONED,
        Outcome.BACKING_OFF: BACKING_OFF,
        Outcome.UNAVAILABLE: UNAVAILABLE,
        Outcome.MEMORY_OFF: MEMORY_OFF,
    }.get(result.status, FAILED)


def _reported(result: Result) -> dict[int, str]:
    """The memories the result's sentence quotes, by id: the turn's save re-checks them (memory.forgetting)."""
    quoted: dict[int, str] = {}
    for change in result.changes:
        if change.memory_id is not None and change.content:
            quoted[change.memory_id] = change.content
        if change.previous_id is not None and change.previous_content:
            quoted[change.previous_id] = change.previous_content
    return quoted


class FlushMemoryTool:
    name = "flush_memory"
    description = DESCRIPTION
    activity_label = _("Updating memory…")
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

    def available(self, ctx: TurnContext) -> bool:
        """Offered only where it can act: not in a temporary conversation (nor a project whose memory is off), not
        with memory off. `ctx.user.memory_enabled` is fresh: the turn re-reads it when it starts, with the
        conversation's project (chat.turn.transactions)."""
        return bool(ctx.user.memory_enabled) and learns_here(ctx.conversation)

    def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
        if not learns_here(ctx.conversation):
            return TEMPORARY
        deadline = time.monotonic() + retries.flush_wait()
        while True:
            result = batches.extract(
                user_id=ctx.user.pk,
                trigger=ExtractionRun.Trigger.FLUSH,
                up_to_message_id=ctx.user_message.pk,
            )
            if result.status != Outcome.BUSY or time.monotonic() >= deadline:
                break
            time.sleep(retries.FLUSH_POLL_SECONDS)
        forgetting.turn_memories_note(
            user_id=ctx.user.pk, user_message_id=ctx.user_message.pk, contents=_reported(result)
        )
        # An explicit request always ends with a marker: a change marks itself; anything else says why.
        explicit = lexicon.is_explicit_request(ctx.user_message.content or "")
        if explicit and not result.changed and result.status not in UNMARKED:
            notices.announce_outcome(user_id=ctx.user.pk, message_id=ctx.user_message.pk, result=result)
        later, countdown = retries.flush_follow_up(result)
        if later:
            self._review_later(ctx, countdown=countdown, announce=explicit)
        return result_sentence(result)

    @staticmethod
    def _review_later(ctx: TurnContext, countdown: float | None = None, announce: bool = False) -> None:
        from memory.tasks import enqueue_for_message

        enqueue_for_message(
            user_id=ctx.user.pk,
            message_id=ctx.user_message.pk,
            countdown=countdown,
            trigger=ExtractionRun.Trigger.FLUSH if announce else ExtractionRun.Trigger.BACKGROUND,
            announce=announce,
        )


flush_memory = FlushMemoryTool()
