"""The two transactions that bracket every chat turn: its start (`turn_start`, or `turn_retry_start` for a
failed reply written again), which takes the conversation's lock and saves the user's message, and its
finish (`turn_finish`), which saves the reply and the agent state and releases the lock."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import User
from chat import edits, extensions, versions
from chat.limits import (
    TurnOrigin,
    address_rate_check,
    turn_counted,
    turn_rate_check,
    turns_running_elsewhere,
    user_row,
)
from chat.models import AgentState, Conversation, Message, Project
from chat.process import owner
from chat.rejections import AccessEnded, ConversationBusy, ConversationGone, NothingToRetry, RunSlotsFull
from chat.search.index import search_index_messages
from chat.services import message_content_clean, title_from, without_nul
from core.sql import column, prepared, table
from core.sql import value as sql_value


def _now() -> Any:
    """The current time; a seam for tests."""
    return timezone.now()


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
    # The turn's first message titled the conversation: the title is indexed with the reply (turn_finish).
    retitled: bool = False
    # The state's learned context window and token calibration (chat.turn.context_budget), read with it.
    context_window: int | None = None
    token_ratio: float | None = None
    # An edit (turn_start's `replace`): the old message and the replies after it, deleted.
    replaced_ids: tuple[int, ...] = ()


def _turn_claim(
    *, user: User, conversation: Conversation, now: Any, title: str | None = None, origin: TurnOrigin | None = None
) -> uuid.UUID:
    """Within the caller's transaction: check that the user may still start turns (active, the socket's
    session alive) and the turn rates, take the conversation lock and a run slot, and count the turn
    started; the lock token. Raises TurnRejected (rolling back with the caller's transaction).
    With `title`, the same statement moves the conversation to the top, titled from it unless it has one."""
    origin = origin or TurnOrigin()
    # Serialise turn starts per user, so two of them cannot both take the last run slot
    # (a no-op on SQLite, whose writers are serialised anyway). The row also gives the current
    # memory switch: the `user` object may be stale (a long-lived WebSocket's, say). The same statement
    # counts the turns started in the last minute and checks the user's access.
    row = user_row(user_id=user.pk, now=now, lock=True, origin=origin)
    if row is None or not row.has_access(origin):
        raise AccessEnded()
    user.memory_enabled = row.memory_enabled
    turn_rate_check(user=user, now=now, recent=row.user_turns)
    address_rate_check(address=origin.address, now=now, recent=row.address_turns)
    extensions.spend_check(user.pk)  # a monthly token quota (the usage app)
    token = uuid.uuid4()
    if not _lock_take(conversation_id=conversation.pk, token=token, now=now, title=title):
        if not Conversation.objects.filter(pk=conversation.pk).exists():
            raise ConversationGone()
        raise ConversationBusy()
    running = turns_running_elsewhere(user_id=user.pk, conversation_id=conversation.pk, now=now)
    if running >= settings.CHAT_USER_RUN_SLOTS:
        raise RunSlotsFull(settings.CHAT_USER_RUN_SLOTS)
    turn_counted(user_id=user.pk, address=origin.address, now=now)
    return token


def _lock_take(*, conversation_id: uuid.UUID, token: uuid.UUID, now: Any, title: str | None) -> bool:
    """Take the conversation's lock if it is free; with `title`, the same statement moves the conversation to
    the top (`_touch`). Whether it was taken.

    In SQL rather than the ORM, as chat.limits.user_row: on every turn's way to its first token, where Django
    building the statement cost several times running it. Values are prepared as the fields prepare them."""
    c = functools.partial(column, Conversation)
    expires = now + timedelta(seconds=settings.CHAT_LOCK_TTL_SECONDS)
    sets = f"{c('lock_token')} = %s, {c('lock_expires_at')} = %s, {c('lock_owner')} = %s, {c('stop_requested')} = %s"
    params: list[Any] = [_as_uuid(token), _as_time(expires), owner(), False]
    if title is not None:
        touch, touched = _touch(title=title, now=now)
        sets, params = f"{sets}, {touch}", [*params, *touched]
    free = f"({c('lock_expires_at')} IS NULL OR {c('lock_expires_at')} <= %s)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table(Conversation)} SET {sets} WHERE {c('id')} = %s AND {free}",
            [*params, _as_uuid(conversation_id), _as_time(now)],
        )
        return cursor.rowcount > 0


def _touch(*, title: str, now: Any) -> tuple[str, list[Any]]:
    """The SET clauses (and their values) that move a conversation to the top, titled from `title` unless it
    has one (checked in SQL: the object may be stale)."""
    name = column(Conversation, "title")
    touch = f"{column(Conversation, 'updated_at')} = %s, {name} = CASE WHEN {name} = '' THEN %s ELSE {name} END"
    return touch, [_as_time(now), title_from(title)]


def _as_uuid(value: uuid.UUID) -> Any:
    return prepared(Conversation, "id", value)


def _as_time(value: Any) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


@transaction.atomic
def turn_count_only(*, user: User, origin: TurnOrigin | None = None) -> None:
    """A model request that saves nothing (a temporary request to the OpenAI-compatible endpoint): checked
    and counted against the turn rates like any turn. Raises TurnRejected."""
    origin = origin or TurnOrigin()
    now = _now()
    row = user_row(user_id=user.pk, now=now, lock=True, origin=origin)
    if row is None or not row.has_access(origin):
        raise AccessEnded()
    turn_rate_check(user=user, now=now, recent=row.user_turns)
    address_rate_check(address=origin.address, now=now, recent=row.address_turns)
    extensions.spend_check(user.pk)
    turn_counted(user_id=user.pk, address=origin.address, now=now)


@transaction.atomic
def user_messages_add(*, user: User, conversation: Conversation, contents: list[str]) -> list[Message]:
    """Save user messages that no turn answers (the earlier of several new messages a client of the
    OpenAI-compatible endpoint sent at once), to be learned from like any other, and index them."""
    learns = user.memory_enabled and not conversation.temporary
    status = Message.MemoryStatus.PENDING if learns else Message.MemoryStatus.SKIPPED
    messages = Message.objects.bulk_create(
        [
            Message(conversation=conversation, user=user, role=Message.Role.USER, content=message_content_clean(text),
                    memory_status=status)
            for text in contents
        ]
    )  # fmt: skip
    search_index_messages(messages=messages)
    return messages


@dataclass
class _State:
    context: list[dict[str, Any]]
    version: int
    context_window: int | None
    token_ratio: float | None


def _turn_state(conversation: Conversation, *, title: str | None, now: Any) -> _State:
    """The conversation's agent state (and title, and its project as it is now: a project's mode and
    instructions apply from its next turn); with `title`, first move it to the top (`_touch`)."""
    if title is not None:
        touch, touched = _touch(title=title, now=now)
        with connection.cursor() as cursor:
            sql = f"UPDATE {table(Conversation)} SET {touch} WHERE {column(Conversation, 'id')} = %s"
            cursor.execute(sql, [*touched, _as_uuid(conversation.pk)])
    conversation.updated_at = now
    c, s, p = (functools.partial(column, model) for model in (Conversation, AgentState, Project))
    # In SQL, as the claim (`_lock_take`); the model is read again: the object may be stale, and a model
    # chosen since applies to this turn.
    sql = (
        f"SELECT c.{c('title')}, c.{c('model')}, s.{s('context')}, s.{s('version')}, s.{s('context_window')},"
        f" s.{s('token_ratio')}, c.{c('project')}, p.{p('name')}, p.{p('instructions')}, p.{p('memory_mode')}"
        f" FROM {table(Conversation)} c LEFT JOIN {table(AgentState)} s ON s.{s('conversation')} = c.{c('id')}"
        f" LEFT JOIN {table(Project)} p ON p.{p('id')} = c.{c('project')} WHERE c.{c('id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [_as_uuid(conversation.pk)])
        row = cursor.fetchone()
    conversation.title, conversation.model, stored, version, window, ratio = row[:6]
    project_id, name, instructions, mode = row[6:]
    conversation.project = None
    if project_id is not None:
        fields = {"name": name, "instructions": instructions, "memory_mode": mode}
        conversation.project = Project(pk=project_id, owner_id=conversation.owner_id, **fields)
    if version is None:  # every conversation is created with its state; this only repairs a missing one
        state = AgentState.objects.create(conversation=conversation)
        stored, version = state.context, state.version
    else:
        stored = sql_value(AgentState, "context", stored)
    return _State(list(stored), version, window, ratio)


@transaction.atomic
def turn_start(
    *,
    user: User,
    conversation: Conversation,
    content: str,
    origin: TurnOrigin | None = None,
    replace: int | None = None,
) -> StartedTurn:
    """Take the conversation lock and a run slot, then save the user's message.

    Both happen in one transaction: a refused turn writes nothing, an accepted one has its user
    message saved before the model is called, so it is never lost. With `replace`, the message is an
    edit of the latest one the user sent (that message's id), which goes with its replies (chat.edits).
    """
    content = message_content_clean(content)
    now = _now()
    title_before = conversation.title
    token = _turn_claim(user=user, conversation=conversation, now=now, title=content, origin=origin)
    replaced = (
        edits.message_replace(conversation=conversation, message_id=replace, content=content) if replace else None
    )
    state = _turn_state(conversation, title=None, now=now)  # touched with the lock; reads its project too
    if replaced is not None:  # the old turn leaves the state; the new one is saved in its place
        state.context = context_before(state.context, replaced.content)
    project = conversation.project
    learns = user.memory_enabled and not conversation.temporary and (project is None or project.uses_memory)
    # One INSERT for both messages (ids in this order).
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
    # Not indexed for search here: that write (and on SQLite its full-text trigger) would be on the way to
    # the first token. The message, and the title it gave the conversation, are indexed with the reply.
    return StartedTurn(
        user, conversation, user_message, assistant_message, token, state.context, state.version,
        context_window=state.context_window, token_ratio=state.token_ratio,
        retitled=conversation.title != title_before,
        replaced_ids=tuple(replaced.message_ids) if replaced else (),
    )  # fmt: skip


def turn_index(turn: StartedTurn, reply: Message) -> None:
    """Index the turn's text for search as it is saved: the reply, whatever its status, and unless the
    turn was a retry (whose message was indexed by its first turn) the user's message, with the title
    it gave the conversation (read again: the user may have renamed it meanwhile)."""
    messages = [reply] if turn.retry else [turn.user_message, reply]
    retitled = None
    if turn.retitled:
        retitled = Conversation.objects.filter(pk=turn.conversation.pk).only("owner_id", "title", "created_at").first()
    search_index_messages(messages=messages, retitled=retitled)


def retryable_reply(conversation: Conversation) -> Message | None:
    """The conversation's latest message when it is a reply that failed or was stopped: the one reply
    Retry can regenerate in place (an earlier one has later messages that depend on it)."""
    latest = Message.objects.filter(conversation=conversation).order_by("-created_at", "-id").first()
    return latest if latest is not None and latest.offers_retry else None


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
def turn_retry_start(
    *,
    user: User,
    conversation: Conversation,
    message_id: int | None = None,
    origin: TurnOrigin | None = None,
    regenerate: bool = False,
) -> StartedTurn:
    """Regenerate the conversation's failed (or stopped) latest reply in place: the same user message,
    the same reply row, emptied and streaming again. Refused like turn_start, writing nothing; also
    with NothingToRetry when the latest message is not such a reply (or is not `message_id`).

    With `regenerate`, the latest reply may have any status, and the version it shows is kept among its
    `alternatives` (chat.versions) before it is written again."""
    now = _now()
    token = _turn_claim(user=user, conversation=conversation, now=now, origin=origin)
    reply = versions.latest_reply(conversation) if regenerate else retryable_reply(conversation)
    if reply is None or (message_id is not None and reply.pk != message_id):
        raise NothingToRetry(_("Only the latest reply can be regenerated.") if regenerate else "")
    if regenerate:
        versions.keep_shown(reply, now=now)
    user_message = (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__lt=reply.pk)
        .order_by("-created_at", "-id")
        .first()
    )
    if user_message is None:
        raise NothingToRetry()
    reply.content, reply.error, reply.status, reply.updated_at = "", "", Message.Status.STREAMING, now
    reply.save(update_fields=["content", "error", "status", "updated_at", "alternatives", "version"])
    search_index_messages(messages=[reply])  # emptied: out of the index until it is written again
    title_before = conversation.title
    state = _turn_state(conversation, title=user_message.content, now=now)
    context = context_before(state.context, user_message.content)
    return StartedTurn(
        user, conversation, user_message, reply, token, context, state.version, retry=True,
        context_window=state.context_window, token_ratio=state.token_ratio,
        retitled=conversation.title != title_before,
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
        # Deleted with its conversation, or already closed by crash recovery (chat/turn/leases.py) after this
        # turn's lease ran out: nothing left to save or announce.
        return Message.objects.filter(pk=message.pk).first() or message
    turn_index(turn, message)

    context = [*turn.context, {"role": "user", "content": turn.user_message.content}, *without_nul(new_items)]
    # The state row is locked before the filters re-check what was deleted while the turn ran (SPEC §8):
    # a deletion that redacts agent states either finished before (and the filters see it) or waits.
    list(AgentState.objects.select_for_update().filter(conversation=turn.conversation).values_list("pk"))
    for state_filter in extensions.state_filters():
        context = state_filter(turn.user.pk, turn.user_message.pk, context)
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
    extensions.turn_saving.send(sender=Message, user_id=turn.user.pk, assistant_message_id=message.pk)
    transaction.on_commit(lambda: extensions.turn_finished.send(sender=Message, **payload))
    # A tool may have processed the user's message for memory during the turn (flush_memory).
    turn.user_message.refresh_from_db(fields=["memory_status"])
    extensions.annotate_messages([message])  # what the reply used, for the "done" event and the final push
    return message
