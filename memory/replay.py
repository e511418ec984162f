"""What is replayed to the model after a permanent delete (SPEC §9 "Recall by meaning"), beyond the
sentence's copies that memory.forgetting redacts wherever they are: found by the memory's id, not by
its words, so a reworded copy goes too.

- **The turn that taught it.** In the agent state of each conversation a memory was learned in (its
  sources, `MemorySource`), the source message's turn — the user's message and what the assistant said
  until the next user message ("kiwis are off the menu for you") — is replaced by `LEARNED_FROM`; the
  items, their roles and every tool call's id and result stay.
- **search_history.** Those messages, the replies of those turns, and every message of the user quoting
  the sentence are withheld from `search_history` (`ReplayWithheld`, by message id), and so are the titles
  of their conversations (a title is drawn from a conversation's first message).

The page still shows them (the display log is the user's own record, until they delete the
conversation); the model is no longer given them. Registered as the "replay" redactor (memory/apps.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from uuid import UUID

from chat.models import AgentState, Message
from memory.forgetting import DELETED_MEMORY, Forgotten
from memory.models import MemorySource, ReplayWithheld

LEARNED_FROM = "(a message about a memory that was since deleted)"
# Shorter forms of a sentence are not searched for in messages (they would match unrelated text).
QUOTE_MIN = 8


def _turn_redact(context: list[dict[str, Any]], taught: set[str]) -> list[dict[str, Any]]:
    """The context with each turn whose user message is in `taught` replaced by notes, item by item."""
    result: list[dict[str, Any]] = []
    inside = False
    for item in context:
        role, content = item.get("role"), item.get("content")
        if role == "user":
            inside = isinstance(content, str) and content.strip() in taught
            result.append({**item, "content": LEARNED_FROM} if inside else item)
        else:
            result.append(_answer_redacted(item) if inside else item)
    return result


def _answer_redacted(item: dict[str, Any]) -> dict[str, Any]:
    """An item answering a taught user message: the assistant's text and the tools' results go."""
    role, content = item.get("role"), item.get("content")
    if role == "assistant" and isinstance(content, str) and content:
        return {**item, "content": LEARNED_FROM}
    if role == "tool":
        return {**item, "content": DELETED_MEMORY}
    return item


def _turn_replies(sources: dict[int, UUID]) -> set[int]:
    """The assistant messages answering each source message (message id → conversation id), up to the
    conversation's next user message."""
    replies: set[int] = set()
    for conversation_id in set(sources.values()):
        rows = Message.objects.filter(conversation_id=conversation_id).order_by("pk").values_list("pk", "role")
        inside = False
        for pk, role in rows:
            if role == Message.Role.USER:
                inside = pk in sources
            elif inside:
                replies.add(pk)
    return replies


def replay_redact(forgotten: Forgotten) -> None:
    """The redactor: the teaching turns leave the agent states, and their messages (and any quoting the
    sentence) leave what search_history gives the model."""
    rows = MemorySource.objects.filter(memory_id__in=forgotten.ids).values_list(
        "message_id", "message__conversation_id", "message__content"
    )
    sources = {pk: conversation for pk, conversation, _ in rows}
    taught: dict[UUID, set[str]] = defaultdict(set)
    for _, conversation, content in rows:
        taught[conversation].add(content.strip())
    withheld = set(sources) | _turn_replies(sources)
    for form in forgotten.forms():
        if len(form) >= QUOTE_MIN:
            quoting = Message.objects.filter(conversation__owner_id=forgotten.user_id, content__contains=form)
            withheld.update(quoting.values_list("pk", flat=True))
    ReplayWithheld.objects.bulk_create([ReplayWithheld(message_id=pk) for pk in withheld], ignore_conflicts=True)
    states = AgentState.objects.select_for_update().filter(
        conversation_id__in=list(taught), conversation__owner_id=forgotten.user_id
    )
    for state in states.only("pk", "conversation_id", "context"):
        context = _turn_redact(state.context, taught[state.conversation_id])
        if context != state.context:
            AgentState.objects.filter(pk=state.pk).update(context=context)


def withheld_ids(message_ids: list[int]) -> set[int]:
    """Which of these messages search_history must not give the model."""
    return set(ReplayWithheld.objects.filter(message_id__in=message_ids).values_list("message_id", flat=True))


def withheld_conversations(conversation_ids: list[Any]) -> set[Any]:
    """Which of these conversations hold a withheld message (their title may come from it)."""
    rows = ReplayWithheld.objects.filter(message__conversation_id__in=conversation_ids)
    return set(rows.values_list("message__conversation_id", flat=True))
