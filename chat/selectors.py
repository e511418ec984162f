"""Reads. Every query is scoped to the requesting user; missing and not-yours are the same 404."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import User
from chat.llm import catalogue, get_chat_model
from chat.models import AgentState, Conversation, ConversationMarker, Message, Project
from chat.turn import context_budget, cut
from core.sql import column, columns, instance, prepared, table


def conversation_list(*, user: User) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


def project_list(*, user: User) -> QuerySet[Project]:
    """The user's projects, by name."""
    return Project.objects.filter(owner=user).order_by("name", "id")


def project_choices(user_id: int) -> list[tuple[int, str]]:
    """The user's projects as (id, name), by name (what a token may be limited to)."""
    return list(Project.objects.filter(owner_id=user_id).order_by("name", "id").values_list("id", "name"))


def project_conversation_ids(*, user: User, project_id: int) -> list[Any]:
    """The ids of the user's conversations in one project."""
    return list(Conversation.objects.filter(owner=user, project_id=project_id).values_list("pk", flat=True))


def project_get_for_user(*, user: User, project_id: int) -> Project:
    return get_object_or_404(project_list(user=user), pk=project_id)


def conversation_titled(conversations: QuerySet[Conversation], title: str) -> QuerySet[Conversation]:
    """The conversations whose title holds `title` (any case; blank: all), the sidebar's filter."""
    return conversations.filter(title__icontains=title.strip()) if title.strip() else conversations


def conversation_sidebar(*, user: User, current: Conversation | None = None, title: str = "") -> QuerySet[Conversation]:
    """The sidebar's history: temporary chats are listed only while they are open; a project's conversations
    are listed under their project (`project_sidebar`), pinned ones on top (`conversation_pinned`)."""
    keep = Q(temporary=False, project__isnull=True)
    if current is not None and current.project_id is None:
        keep |= Q(pk=current.pk)
    return conversation_titled(conversation_list(user=user).filter(keep, pinned=False), title)


def conversation_pinned(*, user: User, title: str = "") -> list[Conversation]:
    """The user's pinned conversations, on top of the sidebar, most recent first."""
    pinned = conversation_titled(conversation_list(user=user).filter(pinned=True), title)
    return list(pinned.order_by("-updated_at", "-id")[:100])


def conversation_sidebar_count(*, user: User, current: Conversation | None = None, title: str = "") -> int:
    """How many conversations the sidebar lists in all (pinned, in projects, by date) for a filter."""
    keep = Q(temporary=False) | Q(pk=current.pk) if current is not None else Q(temporary=False)
    return conversation_titled(conversation_list(user=user).filter(keep), title).count()


PROJECT_SIDEBAR_CHATS = 5


def project_sidebar(*, user: User, current: Conversation | None = None, title: str = "") -> list[Project]:
    """The user's projects, each with `recent`: its newest conversations (at most PROJECT_SIDEBAR_CHATS, and the
    open one; a pinned one is listed on top instead), for the sidebar. Two queries. With a `title` filter, only
    the projects holding a conversation it matches."""
    projects = list(project_list(user=user))
    if not projects:
        return []
    by_id = {p.pk: p for p in projects}
    for project in projects:
        project.recent = []  # type: ignore[attr-defined]
    keep = Q(temporary=False) | Q(pk=current.pk) if current is not None else Q(temporary=False)
    rows = conversation_list(user=user).filter(keep, project__isnull=False, pinned=False).order_by("-updated_at", "-id")
    _recent_fill(by_id, conversation_titled(rows, title)[: 20 * PROJECT_SIDEBAR_CHATS], current)
    if title.strip():
        return [p for p in projects if p.recent]  # type: ignore[attr-defined]
    return projects


def _recent_fill(by_id: dict[int, Project], rows: Iterable[Conversation], current: Conversation | None) -> None:
    """Each project's newest conversations among `rows` (newest first), the open one always."""
    current_id = current.pk if current is not None else None
    for conversation in rows:
        recent = by_id[conversation.project_id].recent  # type: ignore[attr-defined,index]
        if len(recent) < PROJECT_SIDEBAR_CHATS or conversation.pk == current_id:
            recent.append(conversation)


def conversation_get_for_user(*, user: User, conversation_id: UUID | str) -> Conversation:
    """The user's conversation, with its project (one join)."""
    return get_object_or_404(conversation_list(user=user).select_related("project"), pk=conversation_id)


def conversation_for_turn(*, user: User, conversation_id: UUID | str) -> Conversation:
    """The user's conversation as a turn's start reads it (Http404 unless it is theirs): without its project,
    which the start reads with the agent state (chat.turn.transactions). A raw read: it is on every turn's way
    to its first token, and Django building the query cost several times running it."""
    pk = prepared(Conversation, "id", Conversation._meta.get_field("id").to_python(conversation_id))
    mine = f"c.{column(Conversation, 'id')} = %s AND c.{column(Conversation, 'owner')} = %s"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns(Conversation, 'c')} FROM {table(Conversation)} c WHERE {mine}", [pk, user.pk])
        found = cursor.fetchone()
    if found is None:
        raise Http404("No Conversation matches the given query.")
    return instance(Conversation, found)


@dataclass(frozen=True)
class ChatModelOption:
    """One model of the picker: what is sent, how the page names it, whether it is the default."""

    id: str
    label: str
    default: bool


def chat_model_choices() -> list[ChatModelOption]:
    """The chat models a conversation may use, the default first. A provider's models are named by their
    ids; the one model of another backend (the offline demo) by its own label."""
    model = get_chat_model()
    default = catalogue.default_chat_model()
    own_label = settings.LLM_BACKEND != "openai" and not settings.CHAT_MODELS and model.label
    return [ChatModelOption(id=c.id, label=own_label or c.id, default=c.id == default) for c in catalogue.chat_models()]


def message_get(*, message_id: int) -> Message | None:
    """One message as saved now (None once deleted with its conversation)."""
    return Message.objects.filter(pk=message_id).first()


def message_list(*, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("created_at", "id")


def marker_list(*, conversation: Conversation) -> list[ConversationMarker]:
    """The conversation's markers (chat.markers), in time order."""
    return list(ConversationMarker.objects.filter(conversation=conversation).order_by("created_at", "id"))


@dataclass(frozen=True)
class ContextSize:
    """How big a conversation's agent state is, and how often it was compacted (chat.turn.compaction)."""

    items: int
    tokens: int
    compactions: int
    summary: str | None  # the summary at the start of the state, if any
    summarized_through_id: int | None  # the last user message (display log) the summary covers


def conversation_context_size(*, conversation: Conversation) -> ContextSize:
    state = AgentState.objects.filter(conversation=conversation).first()
    if state is None:
        return ContextSize(items=0, tokens=0, compactions=0, summary=None, summarized_through_id=None)
    return ContextSize(
        items=len(state.context),
        tokens=context_budget.state_tokens(state),
        compactions=state.compactions,
        summary=cut.summary_of(state.context),
        summarized_through_id=state.summarized_through_id,
    )


@dataclass(frozen=True)
class SummaryDivider:
    """Where the page shows "earlier messages were summarized": before the first user message the summary
    does not cover, or after the last message when it covers them all (`before_message_id` None)."""

    summary: str
    before_message_id: int | None


def _divider_before(size: ContextSize, user_message_ids: list[int]) -> int | None:
    assert size.summarized_through_id is not None
    return next((pk for pk in user_message_ids if pk > size.summarized_through_id), None)


def with_summary_divider(messages: list[Message], size: ContextSize) -> list[Message]:
    """Mark the divider's place on the page's messages: `summary_before` on the first user message the
    summary does not cover, else `summary_after` on the last message (every earlier one is summarized)."""
    if size.summary is None or size.summarized_through_id is None or not messages:
        return messages
    before = _divider_before(size, [m.pk for m in messages if m.role == Message.Role.USER])
    for message in messages:
        if message.pk == before:
            message.summary_before = size.summary  # type: ignore[attr-defined]
            return messages
    messages[-1].summary_after = size.summary  # type: ignore[attr-defined]
    return messages


def summary_divider(*, conversation: Conversation) -> SummaryDivider | None:
    """The conversation's divider as it is now (None without a summary): what a live page is sent when
    a summary is applied."""
    size = conversation_context_size(conversation=conversation)
    if size.summary is None or size.summarized_through_id is None:
        return None
    users = Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__gt=size.summarized_through_id)
    first = users.order_by("created_at", "id").values_list("pk", flat=True).first()
    return SummaryDivider(summary=size.summary, before_message_id=first)


SIDEBAR_PAGE = 50


def conversation_sidebar_page(
    *,
    user: User,
    current: Conversation | None = None,
    before: tuple[datetime, UUID] | None = None,
    limit: int = SIDEBAR_PAGE,
    title: str = "",
) -> tuple[list[Conversation], tuple[datetime, UUID] | None]:
    """One page of the sidebar, newest first, and the cursor of the next page (None at the end).

    A cursor (the last item's update time and id), not an offset: a conversation that moves to the
    top while the list is open is not shown twice."""
    conversations = conversation_sidebar(user=user, current=current, title=title).order_by("-updated_at", "-id")
    if before is not None:
        updated_at, pk = before
        conversations = conversations.filter(Q(updated_at__lt=updated_at) | Q(updated_at=updated_at, pk__lt=pk))
    page = list(conversations[: limit + 1])
    if len(page) <= limit:
        return page, None
    last = page[limit - 1]
    return page[:limit], (last.updated_at, last.pk)
