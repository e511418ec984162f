"""Compaction of the agent state (SPEC §7): long conversations keep fitting the model's context window.

The oldest part of `AgentState.context` is replaced by one summary item written by `SUMMARY_MODEL`
(prompt: chat/prompts/summary.md), followed by the most recent exchanges kept verbatim. The summary is
a clearly marked system item at the start of the state (see `is_summary`); an earlier summary is folded
into the next one. The display log (`Message`) is never touched.

When:
- after a turn, above `CHAT_COMPACT_AT` of the input budget: in the background (`chat.tasks`), applied
  only if the state is unchanged and no turn is running;
- before a request that would not fit: synchronously, inside the turn (`Turn` shows an activity line);
- after a provider's refusal for length: harder, then the turn retries once.
If the summarizer fails, the oldest items are dropped instead (logged) when the turn cannot fit otherwise.

How it is split: the budget (chat/turn/context_budget.py), planning the cut (chat/turn/cut.py), writing
the summary (chat/turn/summary.py), and applying it, here: inside a turn, in the background, saving.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext

from chat import extensions, model_queue
from chat.llm import LLMError, metering, tokens, tools_usable
from chat.models import AgentState, Conversation, Message
from chat.turn.context_budget import Budget, budget_for
from chat.turn.cut import drop_oldest
from chat.turn.model_input import system_prompt
from chat.turn.summary import Compacted, compact

logger = logging.getLogger(__name__)

#: the name of the tool-like event a turn sends while it summarizes (SSE `tool`, the page's activity line)
SUMMARIZING = "summarize_context"
#: a background compaction not finished after this long is presumed lost and may be queued again
PENDING_TTL = timedelta(minutes=10)


class InputTooLong(LLMError):
    """The turn cannot fit the window even with an empty agent state: the new message is too long."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="too_long")


# --- saving ---


def _summarized_through(conversation_id: Any, previous_id: int | None, turns: int) -> int | None:
    """The display log's user message up to which the summary now reaches: `turns` further than before."""
    if turns <= 0:
        return previous_id
    users = Message.objects.filter(conversation_id=conversation_id, role=Message.Role.USER)
    if previous_id is not None:
        users = users.filter(pk__gt=previous_id)
    ids = list(users.order_by("created_at", "id").values_list("pk", flat=True)[:turns])
    return ids[-1] if ids else previous_id


def _may_save(conversation_id: Any, lock_token: Any, now: Any) -> bool:
    """Whether the conversation (locked for the transaction) may take a compacted state: without
    `lock_token`, while no turn holds it; with it, while that lock is still ours."""
    conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
    if conversation is None:
        return False
    if lock_token is not None:
        return conversation.lock_token == lock_token
    return conversation.lock_expires_at is None or conversation.lock_expires_at <= now


@transaction.atomic
def state_compacted_save(
    *, conversation_id: Any, version: int, result: Compacted, lock_token: Any = None, read: Any = None
) -> int | None:
    """Save a compacted state if it is still at `version`. Without `lock_token` (background) only while no
    turn holds the conversation's lock; with it, only while that lock is still ours. With `read` (the
    context the summary was made from), only while the stored context is still that: a deletion redacts
    agent states in place (memory.forgetting, chat.data), and a summary made from the text before must
    not bring it back. The new version, or None."""
    now = timezone.now()
    if not _may_save(conversation_id, lock_token, now):
        return None
    state = AgentState.objects.filter(conversation_id=conversation_id, version=version).first()
    if state is None or (read is not None and state.context != read):
        return None
    fields: dict[str, Any] = {"context": result.context, "version": version + 1, "updated_at": now}
    if result.summarized:
        fields["compactions"] = F("compactions") + 1
        fields["summarized_through_id"] = _summarized_through(
            conversation_id, state.summarized_through_id, result.summarized_turns
        )
    AgentState.objects.filter(pk=state.pk, version=version).update(**fields)
    return version + 1


# --- inside a turn ---


@dataclass
class Fit:
    """What fitting a turn's request did: the state to use from now on and its version."""

    context: list[dict[str, Any]]
    version: int
    budget: Budget


def _counted(conversation_id: Any, summarize: Callable[[], Compacted | None]) -> Compacted | None:
    """`summarize()`, its provider calls counted against the conversation's owner (chat.llm.metering), even
    when it fails half-way."""
    with metering.counting() as calls:
        try:
            return summarize()
        finally:
            owner = calls and Conversation.objects.filter(pk=conversation_id).values("owner_id", "project_id").first()
            if owner:
                metering.report(user_id=owner["owner_id"], project_id=owner["project_id"], kind="summary", calls=calls)


def fit_turn(
    *,
    conversation_id: Any,
    lock_token: Any,
    context: list[dict[str, Any]],
    version: int,
    measure_without_state: int,
    budget: Budget,
    hard: bool = False,
) -> Fit:
    """Make a turn's request fit the budget, holding the turn's lock: summarize the oldest part (harder
    after a refusal), then drop the oldest items if the summary is not enough or the summarizer failed.
    `measure_without_state` is the request's estimate with an empty state. Raises InputTooLong."""
    ratio = budget.ratio or 1.0
    if measure_without_state > budget.input:
        raise InputTooLong(
            gettext(
                "This message is too long for the model's context window: with the instructions it needs about "
                "%(needed)s tokens, and the model reads at most %(limit)s before its reply. "
                "Shorten it or split it into several messages."
            )
            % {"needed": f"{measure_without_state:,}", "limit": f"{budget.input:,}"}
        )
    room = math.floor((budget.input - measure_without_state) / ratio)  # for the state, in raw estimate
    result: Compacted | None = None
    try:
        result = _counted(
            conversation_id,
            lambda: compact(context, budget=budget, hard=hard, fixed=math.ceil(measure_without_state / ratio)),
        )
    except LLMError as exc:
        logger.warning("summarizing conversation %s failed (%s); dropping its oldest messages", conversation_id, exc)
    if result is None or tokens.estimate_messages(result.context) > room:
        before = result.context if result else context
        dropped = drop_oldest(before, room)
        if len(dropped) < len(before):
            logger.warning("conversation %s: dropped the oldest part of the agent state to fit", conversation_id)
        turns = result.summarized_turns if result else 0
        result = Compacted(dropped, summarized_turns=turns, summarized=result is not None)
    saved = state_compacted_save(
        conversation_id=conversation_id, version=version, result=result, lock_token=lock_token, read=context
    )
    return Fit(result.context, version if saved is None else saved, budget)


@transaction.atomic
def failed_turn_discard(*, conversation_id: Any, version: int, context: list[dict[str, Any]]) -> None:
    """After a turn that failed for length, put back the state it ran with (compacted, never bigger than
    the one it found), so the failure leaves nothing that would make the next turn fail too."""
    state_compacted_save(
        conversation_id=conversation_id,
        version=version,
        result=Compacted(context, summarized_turns=0, summarized=False),
    )


# --- in the background ---


def fixed_tokens() -> int:
    """What every request sends besides the state: the system prompt, and the tool schemas when requests
    carry them (not with CHAT_TOOLS=off, nor while the provider is not offered tools)."""
    schemas = extensions.tool_schemas() if tools_usable() else None
    return tokens.estimate_request([{"role": "system", "content": system_prompt()}], schemas)


def needs_compaction(state: AgentState, budget: Budget | None = None) -> bool:
    budget = budget or budget_for(state)
    used = tokens.scaled(tokens.estimate_messages(state.context) + fixed_tokens(), budget.ratio)
    return used > budget.compact_at


def schedule_if_needed(*, conversation_id: Any, enqueue: Callable[[Any], None]) -> bool:
    """Queue one background compaction when the state is above CHAT_COMPACT_AT (at most one at a time)."""
    now = timezone.now()
    state = AgentState.objects.filter(conversation_id=conversation_id).first()
    if state is None or (state.compacting_since is not None and state.compacting_since > now - PENDING_TTL):
        return False  # missing, or one is queued already
    if state.compacted_version == state.version or not needs_compaction(state):
        return False  # already tried for this very state (applied, failed or thrown away), or not needed
    free = Q(compacting_since__isnull=True) | Q(compacting_since__lt=now - PENDING_TTL)
    if not AgentState.objects.filter(free, pk=state.pk).update(compacting_since=now):
        return False
    transaction.on_commit(lambda: enqueue(conversation_id))
    return True


def compact_in_background(*, conversation_id: Any) -> str:
    """Summarize the state of a conversation if still needed, off the lock; applied only if unchanged
    and no turn is running. Returns what happened ("compacted", "not_needed", "changed", "failed")."""
    state = AgentState.objects.filter(conversation_id=conversation_id).first()
    if state is None:
        return "not_needed"
    try:
        budget = budget_for(state)
        if state.compacted_version == state.version or not needs_compaction(state, budget):
            return "not_needed"
        AgentState.objects.filter(pk=state.pk).update(compacted_version=state.version)
        try:
            with model_queue.background():
                result = _counted(conversation_id, lambda: compact(state.context, budget=budget, fixed=fixed_tokens()))
        except LLMError as exc:
            logger.warning("background summary of conversation %s failed: %s", conversation_id, exc)
            return "failed"  # the old state stays; the next turn's end tries again
        if result is None:
            return "not_needed"
        saved = state_compacted_save(
            conversation_id=conversation_id, version=state.version, result=result, read=state.context
        )
        return "compacted" if saved is not None else "changed"
    finally:
        AgentState.objects.filter(pk=state.pk).update(compacting_since=None)
