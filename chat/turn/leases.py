"""The lease on a running turn, and recovery of turns whose process died.

A turn holds its conversation's lock (`Conversation.lock_token`) as a *lease*: `lock_expires_at` is
only CHAT_LOCK_TTL_SECONDS ahead (20 s by default), and the process running the turn renews it every
HEARTBEAT_SECONDS while it also saves the text streamed so far (`turns_heartbeat`: one transaction
for all the turns of a process). If the process dies
(a crash, SIGKILL, out of memory, a deploy), nothing renews the lease, and a sweep (`turns_recover`,
run every few seconds by each web process and by the worker, and at once when a web process starts)
closes the turn: the assistant message is saved `interrupted` with its persisted text, the agent
state gets the user's message and the partial reply (so the next turn sees what happened), and the
lock and the user's run slot are released.

The lock also records its owner, "host:pid:boot" (chat/process.py). A process that starts on the
same host knows the turns of a process that is gone (or of an earlier life of its own pid) are dead: it recovers them at
once instead of waiting for their lease to run out, so a restarted server answers the next turn in
that conversation straight away. The other way round, a lease that ran out while its process still
runs on this host is that process being late (overloaded), not gone: its turn is left to finish, up to
its own deadline (CHAT_TURN_TIMEOUT) past the lease.

Stop is a flag on the conversation (`stop_requested`), so it reaches the turn whichever process runs
it; the runner also cancels a turn of its own process at once (chat/turn/runner.py).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Q, TextField, Value, When
from django.utils.translation import gettext_noop as _

from chat import services
from chat.models import AgentState, Conversation, Message
from chat.process import owner_is_alive, owner_is_dead
from chat.search.index import search_index_messages
from chat.turn import transactions
from chat.turn.model_input import CUT_SHORT  # the agent's own marker for a reply cut short

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 1.0  # partial text is saved about this often; the lease is renewed with it
RECOVERED_ERROR = _("The server stopped while this reply was being written.")


def lease_seconds() -> int:
    return int(settings.CHAT_LOCK_TTL_SECONDS)


@dataclass
class Beat:
    held: bool  # False: the lease was lost (recovered as dead, or the conversation was deleted)
    stop: bool  # Stop was asked for


@dataclass
class Pulse:
    """One running turn, as the process's heartbeat renews it."""

    conversation_id: Any
    lock_token: uuid.UUID
    message_id: int
    content: str | None  # the text so far; None when unchanged since the last beat


@transaction.atomic  # one write transaction a second for all of a process's turns, however many
def turns_heartbeat(pulses: list[Pulse]) -> dict[Any, Beat]:
    """Renew the leases of these turns and save their partial text; each turn's Beat, by conversation."""
    if not pulses:
        return {}
    now = transactions._now()
    # Three statements however many turns: the texts (each only while its reply is still streaming),
    # the leases still held by these tokens, then who holds what and who was asked to stop.
    _texts_save(pulses, now)
    ours = Q()
    for pulse in pulses:
        ours |= Q(pk=pulse.conversation_id, lock_token=pulse.lock_token)
    Conversation.objects.filter(ours).update(lock_expires_at=now + timedelta(seconds=lease_seconds()))
    return _beats(pulses)


def _texts_save(pulses: list[Pulse], now: Any) -> None:
    texts = {p.message_id: services.without_nul(p.content) for p in pulses if p.content is not None}
    if texts:
        text = Case(*(When(pk=pk, then=Value(content)) for pk, content in texts.items()), output_field=TextField())
        Message.objects.filter(pk__in=texts, status=Message.Status.STREAMING).update(content=text, updated_at=now)


def _beats(pulses: list[Pulse]) -> dict[Any, Beat]:
    rows = Conversation.objects.filter(pk__in=[p.conversation_id for p in pulses])
    now_held = {pk: (token, stop) for pk, token, stop in rows.values_list("pk", "lock_token", "stop_requested")}
    beats = {}
    for pulse in pulses:
        token, stop = now_held.get(pulse.conversation_id, (None, False))
        held = token == pulse.lock_token
        beats[pulse.conversation_id] = Beat(held=held, stop=held and stop)
    return beats


def turn_stop_request(*, conversation: Conversation) -> bool:
    """Ask the turn running in `conversation` to stop, wherever it runs. False when none runs."""
    return bool(Conversation.objects.filter(pk=conversation.pk, lock_token__isnull=False).update(stop_requested=True))


# --- recovery ------------------------------------------------------------------------------------


def _is_dead(conversation: Conversation, now: Any) -> bool:
    if conversation.lock_token is None or conversation.lock_expires_at is None:
        return True
    if owner_is_dead(conversation.lock_owner):
        return True
    if conversation.lock_expires_at > now:
        return False
    # An expired lease whose process still runs on this host: the process is late renewing (overloaded),
    # not gone. Its turn ends by its own deadline (CHAT_TURN_TIMEOUT), so only past that is it stuck.
    if owner_is_alive(conversation.lock_owner):
        return conversation.lock_expires_at + timedelta(seconds=float(settings.CHAT_TURN_TIMEOUT)) <= now
    return True


def turns_recover(*, conversation_id: Any = None) -> int:
    """Close the turns whose process died (all of them, or one conversation's); returns how many.

    Safe to run anywhere and concurrently: each close is conditional on the message still streaming
    and the lock still being the one that was read.
    """
    now = transactions._now()
    streaming = Message.objects.filter(status=Message.Status.STREAMING, role=Message.Role.ASSISTANT)
    if conversation_id is not None:
        streaming = streaming.filter(conversation_id=conversation_id)
    newest: dict[Any, int] = {}
    for conversation_pk, message_pk in streaming.order_by("id").values_list("conversation_id", "id"):
        newest[conversation_pk] = message_pk
    recovered = 0
    for conversation in Conversation.objects.filter(pk__in=list(newest)):
        dead = _is_dead(conversation, now)
        for message in streaming.filter(conversation=conversation).order_by("id"):
            if not dead and message.pk == newest[conversation.pk]:
                continue  # the live turn's own reply
            recovered += _close(conversation, message, with_state=dead and message.pk == newest[conversation.pk])
    if recovered:
        logger.warning("recovered %s reply(s) left streaming by a process that stopped", recovered)
    return recovered


@transaction.atomic
def _close(conversation: Conversation, message: Message, *, with_state: bool) -> int:
    """Save one orphaned reply as interrupted; with `with_state`, as its turn would have (state, lock, hook)."""
    if not with_state:
        # An older reply in a conversation whose lock a later turn holds: only the display is fixed.
        closed = Message.objects.filter(pk=message.pk, status=Message.Status.STREAMING).update(
            status=Message.Status.INTERRUPTED, error=RECOVERED_ERROR, updated_at=transactions._now()
        )
        if closed:  # searchable now, as a finished turn's: the reply as the last heartbeat saved it, its message
            asked = Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__lt=message.pk)
            search_index_messages(messages=[m for m in (asked.order_by("id").last(), message) if m is not None])
        return closed
    lock = Q(lock_token=conversation.lock_token) if conversation.lock_token else Q(lock_token__isnull=True)
    if not Conversation.objects.filter(lock, pk=conversation.pk).exists():
        return 0  # the lock changed since it was read: a live turn, or another sweep got there first
    earlier = Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__lt=message.pk)
    user_message = earlier.order_by("id").last()
    state, _ = AgentState.objects.get_or_create(conversation=conversation)
    if user_message is None:
        return _close(conversation, message, with_state=False)
    partial = message.content.strip()
    turn = transactions.StartedTurn(
        user=conversation.owner,
        conversation=conversation,
        user_message=user_message,
        assistant_message=message,
        lock_token=conversation.lock_token or uuid.uuid4(),
        context=list(state.context),
        state_version=state.version,
        retitled=True,  # the title its first turn may have given the conversation is indexed with the reply too
    )
    items = [{"role": "assistant", "content": partial + CUT_SHORT}] if partial else []
    transactions.turn_finish(
        turn=turn, status=Message.Status.INTERRUPTED, content=partial, error=RECOVERED_ERROR, new_items=items
    )
    return 1
