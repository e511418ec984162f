"""Writes: conversations (create, rename, delete, erase, the temporary ones' sweep) and the validation of a
user's message. The two transactions that bracket every chat turn are in chat/turn/transactions.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from accounts.models import User
from chat import extensions, sidebar
from chat.limits import TurnOrigin, turn_rate_check, turn_starts_prune, user_row
from chat.llm import catalogue
from chat.markdown import plain_text
from chat.models import AgentState, Conversation, Message, Project
from chat.rejections import (
    AccessEnded,
    ConversationBusy,
    ConversationGone,
    InvalidMessage,
    NothingToRetry,
    RunSlotsFull,
    TooManyTurns,
    TurnRejected,
    UnknownModel,
)

# Kept importable from here: the turn's callers name them as services.<name>.
__all__ = [
    "AccessEnded", "ConversationBusy", "ConversationGone", "InvalidMessage", "NothingToRetry", "RunSlotsFull",
    "TooManyTurns", "TurnOrigin", "TurnRejected", "UnknownModel", "turn_rate_check", "turn_starts_prune", "user_row",
]  # fmt: skip
from chat.search.index import search_index_title

TITLE_MAX = 60


def message_content_clean(content: object) -> str:
    """Validate a user message; raises InvalidMessage with a sentence saying what is wrong."""
    if not isinstance(content, str):
        raise InvalidMessage(_("Message content must be a string."))
    if not content.strip():
        raise InvalidMessage(_("Message content is empty."))
    limit = settings.CHAT_MAX_MESSAGE_CHARS
    if len(content) > limit:
        raise InvalidMessage(
            _("Message is too long: %(length)s characters; the limit is %(limit)s.")
            % {
                "length": number_format(len(content), force_grouping=True),
                "limit": number_format(limit, force_grouping=True),
            }
        )
    if "\x00" in content:  # PostgreSQL cannot store it; refuse it here rather than fail mid-write
        raise InvalidMessage(_("Message content contains a NUL character (\\u0000), which is not allowed."))
    if not is_valid_text(content):
        raise InvalidMessage(_("Message content contains a lone UTF-16 surrogate (like \\ud800), not valid text."))
    return content


def is_valid_text(text: str) -> bool:
    """False for a lone UTF-16 surrogate (JSON allows "\\ud800"; no database can store it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def without_nul(value: Any) -> Any:
    """`value` with NUL characters removed from every string. Model output and tool results may contain
    them, and PostgreSQL refuses NUL in text and JSON."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    if isinstance(value, dict):
        return {k: without_nul(v) for k, v in value.items()}
    return value


def title_from(content: str) -> str:
    # Markdown syntax is not part of a title.
    text = plain_text(content) or " ".join(content.split())
    if len(text) <= TITLE_MAX:
        return text
    cut = text[:TITLE_MAX].rsplit(" ", 1)[0] or text[:TITLE_MAX]
    return cut + "…"


def model_clean(model: str) -> str:
    """A chat model a conversation may choose (chat.llm.catalogue); raises UnknownModel listing them."""
    offered = catalogue.chat_model_ids()
    if model not in offered:
        raise UnknownModel(model, offered)
    return model


@transaction.atomic
def conversation_create(
    *, user: User, title: str = "", temporary: bool = False, model: str = "", project: Project | None = None
) -> Conversation:
    """A new conversation on `model` (checked), or on the default model of the moment; in `project` when
    given (the caller fetched it for this user)."""
    _check_project_owner(user.pk, project)
    model = model_clean(model) if model else catalogue.default_chat_model()
    conversation = Conversation.objects.create(
        owner=user, title=title.strip()[:200], temporary=temporary, model=model, project=project
    )
    AgentState.objects.create(conversation=conversation)
    if conversation.title:
        search_index_title(conversation=conversation)
    return conversation


def _check_project_owner(user_id: int, project: Project | None) -> None:
    # Callers fetch through project_get_for_user; this guards against a future caller that does not.
    if project is not None and project.owner_id != user_id:
        raise Http404("No Project matches the given query.")


@transaction.atomic
def conversation_move(*, conversation: Conversation, project: Project | None) -> Conversation:
    """Put the conversation in `project` (None: in none). Its memory block and what is learned from its
    pending messages follow the project it is in at the time."""
    _check_project_owner(conversation.owner_id, project)
    conversation.project = project
    Conversation.objects.filter(pk=conversation.pk).update(project=project)  # its place in the list stays
    sidebar.sidebar_changed(conversation=conversation)
    return conversation


@transaction.atomic
def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    conversation.title = title.strip()[:200]
    conversation.save(update_fields=["title", "updated_at"])
    search_index_title(conversation=conversation)
    sidebar.sidebar_changed(conversation=conversation)
    return conversation


@transaction.atomic
def conversation_update(
    *, conversation: Conversation, title: str | None = None, model: str | None = None, pinned: bool | None = None
) -> Conversation:
    """Rename, switch the model (from the next turn on) or pin: whichever is given. A new model starts
    from its own context window and token calibration, so what the state learned of the old one goes."""
    if model is not None and model != conversation.model:
        conversation.model = model_clean(model)
        AgentState.objects.filter(conversation=conversation).update(context_window=None, token_ratio=None)
        Conversation.objects.filter(pk=conversation.pk).update(model=conversation.model)
    if pinned is not None and pinned != conversation.pinned:
        conversation.pinned = pinned
        Conversation.objects.filter(pk=conversation.pk).update(pinned=pinned)
        sidebar.sidebar_changed(conversation=conversation)
    if title is not None:
        conversation_rename(conversation=conversation, title=title)
    return conversation


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Delete the conversation with its messages, markers and agent state, and every copy of its
    messages kept elsewhere (the conversation erasers, chat.extensions: run records, other
    conversations' tool results, a search index)."""
    conversations_erase(user_id=conversation.owner_id, conversation_ids=[conversation.pk])
    sidebar.sidebar_changed(conversation=conversation)  # before the row (and so its id) goes
    conversation.delete()


@transaction.atomic
def messages_delete(*, message_ids: list[int]) -> None:
    """Delete single messages (the admin's delete), with every copy of them kept elsewhere."""
    by_user: dict[int, dict[int, str]] = {}
    for pk, user_id, content in Message.objects.filter(pk__in=message_ids).values_list("pk", "user_id", "content"):
        by_user.setdefault(user_id, {})[pk] = content
    for user_id, messages in by_user.items():
        erased = extensions.ConversationsErased(user_id=user_id, conversation_ids=[], messages=messages)
        for eraser in extensions.conversation_erasers():
            eraser(erased)
    Message.objects.filter(pk__in=message_ids).delete()


def conversations_erase(*, user_id: int, conversation_ids: list[Any]) -> None:
    """Run the conversation erasers for these conversations of the user (inside the caller's
    transaction, before the rows are deleted)."""
    erasers = extensions.conversation_erasers()
    if not erasers or not conversation_ids:
        return
    rows = Message.objects.filter(user_id=user_id, conversation_id__in=conversation_ids).values_list("pk", "content")
    erased = extensions.ConversationsErased(
        user_id=user_id, conversation_ids=list(conversation_ids), messages=dict(rows.iterator(chunk_size=2000))
    )
    for eraser in erasers:
        eraser(erased)


def temporary_conversations_expired(*, now: Any = None) -> models.QuerySet[Conversation]:
    """Temporary chats whose last message (or, with none, whose start) is older than CHAT_TEMPORARY_HOURS,
    and in which no reply is being written."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.CHAT_TEMPORARY_HOURS)
    last = Coalesce(models.Max("messages__created_at"), F("created_at"))
    return (
        Conversation.objects.filter(temporary=True)
        .annotate(last_message_at=last)
        .filter(last_message_at__lt=cutoff)
        .exclude(lock_expires_at__gt=now)
    )


def temporary_conversations_sweep(*, now: Any = None) -> int:
    """Delete the temporary chats that expired (the worker's sweep); how many went. Each goes as the
    owner's delete would, with everything that hangs on it."""
    deleted = 0
    for conversation in temporary_conversations_expired(now=now).only("pk", "owner_id"):
        with transaction.atomic():
            conversation_delete(conversation=conversation)
        deleted += 1
    return deleted
