"""A user chatting over time for the extraction tests: messages at given moments, the post-turn hook's
tasks run when their countdown is over (as a worker runs them), and the pipeline's clock moved along."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from chat.extensions import turn_finished
from chat.models import Message
from memory.extraction import clock as extraction_clock
from memory.tasks import extract_memories_task
from tests.helpers import say

START = timezone.now().replace(microsecond=0) - timedelta(days=1)


class Clock:
    now: datetime = START


def clock_at_start(monkeypatch: Any, settings: Any) -> Clock:
    """The pipeline's clock, moved by hand, with the production waits."""
    settings.MEMORY_EXTRACT_IDLE_SECONDS, settings.MEMORY_EXTRACT_MAX_WAIT_SECONDS = 60, 600
    settings.MEMORY_SWEEP_GRACE_SECONDS = 30
    clock = Clock()
    monkeypatch.setattr(extraction_clock, "now", lambda: clock.now)
    return clock


def tasks_recorded(monkeypatch: Any) -> list[dict[str, Any]]:
    """Tasks handed to the broker (recorded instead of sent), each with its countdown."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(extract_memories_task, "apply_async", lambda **kwargs: calls.append(kwargs))
    return calls


def turn(conversation: Any, text: str, at: datetime, capture: Any) -> Message:
    """A user message sent at `at`, and its turn's end (the post-turn hook, its task enqueued on commit)."""
    message = say(conversation, text)
    Message.objects.filter(pk=message.pk).update(created_at=at)
    with capture(execute=True):
        turn_finished.send(
            sender=Message,
            user_id=message.user_id,
            conversation_id=message.conversation_id,
            user_message_id=message.pk,
            assistant_message_id=None,
            status="complete",
        )
    return message


def chat(
    said: Sequence[tuple[Any, str, datetime]], sent: list[dict[str, Any]], clock: Clock, capture: Any
) -> list[str]:
    """The user's messages (conversation, text, moment); each task the hook sends runs when its countdown is
    over, between the messages as a worker would run it. The tasks' outcomes, in order."""
    due: list[tuple[datetime, dict[str, Any]]] = []
    outcomes: list[str] = []

    def run_until(moment: datetime | None) -> None:
        due.sort(key=lambda item: item[0])
        while due and (moment is None or due[0][0] <= moment):
            clock.now, call = due.pop(0)
            outcomes.append(extract_memories_task.apply(args=call["args"], kwargs=call["kwargs"]).get())

    for conversation, text, at in said:
        run_until(at)
        clock.now = at
        before = len(sent)
        turn(conversation, text, at, capture)
        due += [(at + timedelta(seconds=call.get("countdown") or 0), call) for call in sent[before:]]
    run_until(None)
    return outcomes
