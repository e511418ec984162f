"""Writes: conversations, and the two transactions that bracket every chat turn."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import User
from chat import extensions
from chat.models import AgentState, Conversation, Message

TITLE_MAX = 60


class TurnRejected(Exception):
    """A turn that cannot start. Nothing has been written. `status` is the HTTP status to answer."""

    status = 400
    retry_after: int | None = None  # seconds, sent as Retry-After when set


class InvalidMessage(TurnRejected):
    """The message is not a string, empty or too long (the text says which)."""


class ConversationBusy(TurnRejected):
    status = 409

    def __init__(self) -> None:
        super().__init__(_("Another reply is still being written in this conversation. Wait for it or stop it."))


class ConversationGone(TurnRejected):
    status = 404

    def __init__(self) -> None:
        super().__init__(_("This conversation no longer exists; it may have been deleted in another window."))


class RunSlotsFull(TurnRejected):
    status = 429

    def __init__(self, slots: int) -> None:
        super().__init__(
            ngettext(
                "You already have %(count)d reply being written. Wait for it to finish.",
                "You already have %(count)d replies being written. Wait for one to finish.",
                slots,
            )
            % {"count": slots}
        )


class NothingToRetry(TurnRejected):
    status = 409

    def __init__(self) -> None:
        super().__init__(_("Only the latest reply can be retried, and only when it failed or was stopped."))


class TooManyTurns(TurnRejected):
    status = 429

    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(
            _("Too many messages: the limit is %(limit)d a minute. Wait %(seconds)d s, then send again.")
            % {"limit": limit, "seconds": retry_after}
        )
        self.retry_after = retry_after


def turn_rate_check(*, user: User, now: Any, recent: int | None = None) -> None:
    """Raise TooManyTurns when `user` started CHAT_USER_TURNS_PER_MINUTE turns in the last 60 s;
    `recent` is that count when the caller already has it (turn_start reads it with the user row)."""
    limit = settings.CHAT_USER_TURNS_PER_MINUTE
    if recent is None:
        rows = user_row(user_id=user.pk, now=now)
        recent = rows[0][1] if rows else 0
    if limit <= 0 or (recent or 0) < limit:
        return
    window = now - timedelta(seconds=60)
    times = Message.objects.filter(user=user, role=Message.Role.USER, created_at__gt=window).order_by("-created_at")
    oldest = list(times.values_list("created_at", flat=True)[:limit])[-1]
    raise TooManyTurns(limit, max(1, math.ceil((oldest - window).total_seconds())))


def leases_owner() -> str:
    """The process taking a turn's lock (see chat/leases.py)."""
    from chat.leases import owner

    return owner()


def _now() -> Any:
    """The current time; a seam for tests."""
    return timezone.now()


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
    from chat.markdown import plain_text  # Markdown syntax is not part of a title

    text = plain_text(content) or " ".join(content.split())
    if len(text) <= TITLE_MAX:
        return text
    cut = text[:TITLE_MAX].rsplit(" ", 1)[0] or text[:TITLE_MAX]
    return cut + "…"


@transaction.atomic
def conversation_create(*, user: User, title: str = "", temporary: bool = False) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title=title.strip()[:200], temporary=temporary)
    AgentState.objects.create(conversation=conversation)
    return conversation


@transaction.atomic
def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    conversation.title = title.strip()[:200]
    conversation.save(update_fields=["title", "updated_at"])
    return conversation


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    conversation.delete()


@dataclass
class StartedTurn:
    user: User
    conversation: Conversation
    user_message: Message
    assistant_message: Message
    lock_token: uuid.UUID
    context: list[dict[str, Any]]
    state_version: int
    retry: bool = False  # regenerating a failed reply in place (turn_retry_start)
    # The state's learned context window and token calibration (chat.compaction's budget), read with it.
    context_window: int | None = None
    token_ratio: float | None = None


def _turn_claim(*, user: User, conversation: Conversation, now: Any, title: str | None = None) -> uuid.UUID:
    """Within the caller's transaction: check the user's turn rate, take the conversation lock and a
    run slot; the lock token. Raises TurnRejected (rolling back with the caller's transaction).
    With `title`, the same statement moves the conversation to the top, titled from it unless it has one."""
    # Serialise turn starts per user, so two of them cannot both take the last run slot
    # (a no-op on SQLite, whose writers are serialised anyway). The row also gives the current
    # memory switch: the `user` object may be stale (a long-lived WebSocket's, say).
    # The same statement counts the user's turns in the last minute (CHAT_USER_TURNS_PER_MINUTE).
    locked = user_row(user_id=user.pk, now=now, lock=True)
    user.memory_enabled = bool(locked and locked[0][0])
    turn_rate_check(user=user, now=now, recent=(locked[0][1] or 0) if locked else 0)
    token = uuid.uuid4()
    free = Q(lock_expires_at__isnull=True) | Q(lock_expires_at__lte=now)
    expires = now + timedelta(seconds=settings.CHAT_LOCK_TTL_SECONDS)
    touch = {} if title is None else _touch(title=title, now=now)
    taken = Conversation.objects.filter(free, pk=conversation.pk).update(
        lock_token=token, lock_expires_at=expires, lock_owner=leases_owner(), stop_requested=False, **touch
    )
    if not taken:
        if not Conversation.objects.filter(pk=conversation.pk).exists():
            raise ConversationGone()
        raise ConversationBusy()
    running = Conversation.objects.filter(owner=user, lock_expires_at__gt=now).exclude(pk=conversation.pk).count()
    if running >= settings.CHAT_USER_RUN_SLOTS:
        raise RunSlotsFull(settings.CHAT_USER_RUN_SLOTS)
    return token


def user_row(*, user_id: int, now: Any, lock: bool = False) -> list[tuple[bool, int | None]]:
    """`[(memory_enabled, turns started in the 60 s before now)]` of the user's row (`[]` when it is gone),
    with `lock` locked for update. Every turn saves one user message, and they are counted in the
    database, so the limit (CHAT_USER_TURNS_PER_MINUTE) holds across processes.

    In SQL rather than the ORM on purpose: it is on every turn's way to its first token, and Django's
    resolving of the counting subquery (it deep-copies the inner query) took about a third of the CPU
    of a turn's start; a burst of turns is limited by how fast they start."""
    quote = connection.ops.quote_name

    def column(model: type[models.Model], name: str) -> str:
        field = model._meta.get_field(name)
        assert isinstance(field, models.Field)
        return quote(str(field.column))

    for_update = " FOR UPDATE" if lock and connection.features.has_select_for_update else ""
    sql = (
        f"SELECT u.{column(User, 'memory_enabled')}, (SELECT COUNT(*) FROM {quote(Message._meta.db_table)} m"
        f" WHERE m.{column(Message, 'user')} = u.{column(User, 'id')} AND m.{column(Message, 'role')} = %s"
        f" AND m.{column(Message, 'created_at')} > %s)"
        f" FROM {quote(User._meta.db_table)} u WHERE u.{column(User, 'id')} = %s{for_update}"
    )
    since = connection.ops.adapt_datetimefield_value(now - timedelta(seconds=60))
    with connection.cursor() as cursor:
        cursor.execute(sql, [Message.Role.USER.value, since, user_id])
        return cursor.fetchall()


@dataclass
class _State:
    context: list[dict[str, Any]]
    version: int
    context_window: int | None
    token_ratio: float | None


def _touch(*, title: str, now: Any) -> dict[str, Any]:
    """The fields that move a conversation to the top, titled from `title` unless it has one (checked in
    SQL: the object may be stale)."""
    return {"updated_at": now, "title": Case(When(title="", then=Value(title_from(title))), default=F("title"))}


def _turn_state(conversation: Conversation, *, title: str | None, now: Any) -> _State:
    """The conversation's agent state (and title); with `title`, first move it to the top (`_touch`)."""
    if title is not None:
        Conversation.objects.filter(pk=conversation.pk).update(**_touch(title=title, now=now))
    conversation.updated_at = now
    row = Conversation.objects.filter(pk=conversation.pk).values_list(
        "title",
        "agent_state__context",
        "agent_state__version",
        "agent_state__context_window",
        "agent_state__token_ratio",
    )[0]
    conversation.title, context, version, window, ratio = row
    if version is None:  # every conversation is created with its state; this only repairs a missing one
        state = AgentState.objects.create(conversation=conversation)
        context, version = state.context, state.version
    return _State(list(context), version, window, ratio)


@transaction.atomic
def turn_start(*, user: User, conversation: Conversation, content: str) -> StartedTurn:
    """Take the conversation lock and a run slot, then save the user's message.

    Both happen in one transaction: a refused turn writes nothing, an accepted one has its user
    message saved before the model is called, so it is never lost.
    """
    content = message_content_clean(content)
    now = _now()
    token = _turn_claim(user=user, conversation=conversation, now=now, title=content)
    learns = user.memory_enabled and not conversation.temporary
    # One INSERT for both messages (ids in this order); then one SELECT, whatever happened.
    user_message, assistant_message = Message.objects.bulk_create(
        [
            Message(
                conversation=conversation,
                user=user,
                role=Message.Role.USER,
                content=content,
                memory_status=Message.MemoryStatus.PENDING if learns else Message.MemoryStatus.SKIPPED,
            ),
            Message(conversation=conversation, user=user, role=Message.Role.ASSISTANT, status=Message.Status.STREAMING),
        ]
    )
    state = _turn_state(conversation, title=None, now=now)  # touched with the lock
    return StartedTurn(
        user, conversation, user_message, assistant_message, token, state.context, state.version,
        context_window=state.context_window, token_ratio=state.token_ratio,
    )  # fmt: skip


def retryable_reply(conversation: Conversation) -> Message | None:
    """The conversation's latest message when it is a reply that failed or was stopped: the one reply
    Retry can regenerate in place (an earlier one has later messages that depend on it)."""
    latest = Message.objects.filter(conversation=conversation).order_by("-created_at", "-id").first()
    retryable = (Message.Status.ERROR, Message.Status.INTERRUPTED)
    if latest is None or latest.role != Message.Role.ASSISTANT or latest.status not in retryable:
        return None
    return latest


def context_before(context: list[dict[str, Any]], content: str) -> list[dict[str, Any]]:
    """`context` without the failed turn that answered `content`: what the stored state looked like
    before it, so a retry does not show the model the question twice (or its cut-short answer).

    A failed turn leaves its user message and whatever it wrote at the tail; a turn that failed for
    length left nothing (compaction.failed_turn_discard), and then the tail is an earlier turn's."""
    for index in range(len(context) - 1, -1, -1):
        if context[index].get("role") == "user":
            return context[:index] if context[index].get("content") == content else context
    return context


@transaction.atomic
def turn_retry_start(*, user: User, conversation: Conversation, message_id: int | None = None) -> StartedTurn:
    """Regenerate the conversation's failed (or stopped) latest reply in place: the same user message,
    the same reply row, emptied and streaming again. Refused like turn_start, writing nothing; also
    with NothingToRetry when the latest message is not such a reply (or is not `message_id`)."""
    now = _now()
    token = _turn_claim(user=user, conversation=conversation, now=now)
    reply = retryable_reply(conversation)
    if reply is None or (message_id is not None and reply.pk != message_id):
        raise NothingToRetry()
    user_message = (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__lt=reply.pk)
        .order_by("-created_at", "-id")
        .first()
    )
    if user_message is None:
        raise NothingToRetry()
    reply.content, reply.error, reply.status, reply.updated_at = "", "", Message.Status.STREAMING, now
    reply.save(update_fields=["content", "error", "status", "updated_at"])
    state = _turn_state(conversation, title=user_message.content, now=now)
    context = context_before(state.context, user_message.content)
    return StartedTurn(
        user, conversation, user_message, reply, token, context, state.version, retry=True,
        context_window=state.context_window, token_ratio=state.token_ratio,
    )  # fmt: skip


@transaction.atomic
def turn_finish(
    *, turn: StartedTurn, status: str, content: str, error: str = "", new_items: list[dict[str, Any]]
) -> Message:
    """Save the assistant message and the new agent state, release the lock, then (after commit)
    fire the post-turn hook. `new_items` are the model messages this turn adds after the user's."""
    message = turn.assistant_message
    message.content = without_nul(content)
    message.status = status
    message.error = without_nul(error)[:500]
    message.updated_at = _now()
    fields = {f: getattr(message, f) for f in ("content", "status", "error", "updated_at")}
    if not Message.objects.filter(pk=message.pk, status=Message.Status.STREAMING).update(**fields):
        # Deleted with its conversation, or already closed by crash recovery (chat/leases.py) after this
        # turn's lease ran out: nothing left to save or announce.
        return Message.objects.filter(pk=message.pk).first() or message

    context = [*turn.context, {"role": "user", "content": turn.user_message.content}, *without_nul(new_items)]
    saved = AgentState.objects.filter(conversation=turn.conversation, version=turn.state_version).update(
        context=context, version=turn.state_version + 1, updated_at=_now()
    )
    if not saved:
        # Only possible when our lock expired and another turn ran meanwhile: keep the display
        # message, leave that turn's state alone.
        message.status = Message.Status.ERROR
        message.error = _("The conversation changed while this reply was written; it was not added to the context.")
        Message.objects.filter(pk=message.pk).update(status=message.status, error=message.error)
    Conversation.objects.filter(pk=turn.conversation.pk, lock_token=turn.lock_token).update(
        lock_token=None, lock_expires_at=None, lock_owner="", stop_requested=False
    )

    payload = {
        "user_id": turn.user.pk,
        "conversation_id": turn.conversation.pk,
        "user_message_id": turn.user_message.pk,
        "assistant_message_id": message.pk,
        "status": message.status,
    }
    transaction.on_commit(lambda: extensions.turn_finished.send(sender=Message, **payload))
    # A tool may have processed the user's message for memory during the turn (flush_memory).
    turn.user_message.refresh_from_db(fields=["memory_status"])
    return message
