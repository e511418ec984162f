"""The lease on a running turn: recovery of turns whose process died, and Stop from anywhere."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.search.query import search
from chat.turn import leases, runner
from chat.turn.transactions import turn_start

pytestmark = pytest.mark.django_db(transaction=True)


def crashed_turn(user: User, conversation: Conversation, *, partial: str = "Half a repl") -> Message:
    """A turn whose process died after saving some text: its reply streaming, its lock still held."""
    started = turn_start(user=user, conversation=conversation, content="Tell me everything")
    Message.objects.filter(pk=started.assistant_message.pk).update(content=partial)
    return started.assistant_message


def asked_id(conversation: Conversation) -> int:
    """The id of the conversation's first user message (the crashed turn's)."""
    return (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER)
        .order_by("id")
        .values_list("id", flat=True)[0]
    )


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_an_expired_lease_is_recovered_as_interrupted_with_its_text(
    user: User, conversation: Conversation, turn_hook_calls: list[dict[str, Any]]
) -> None:
    reply = crashed_turn(user, conversation)
    Conversation.objects.filter(pk=conversation.pk).update(lock_owner=f"elsewhere:{dead_pid()}:0000")
    Conversation.objects.filter(pk=conversation.pk).update(lock_expires_at=timezone.now() - timedelta(seconds=1))

    assert leases.turns_recover() == 1

    reply.refresh_from_db()
    assert (reply.status, reply.content, reply.error) == ("interrupted", "Half a repl", leases.RECOVERED_ERROR)
    conversation.refresh_from_db()
    assert (conversation.lock_token, conversation.lock_expires_at, conversation.lock_owner) == (None, None, "")
    state = AgentState.objects.get(conversation=conversation)
    assert state.context == [
        {"role": "user", "content": "Tell me everything"},
        {"role": "assistant", "content": "Half a repl [reply cut short]"},
    ]
    assert [call["status"] for call in turn_hook_calls] == ["interrupted"]  # extraction still sees the message
    # Searchable, as a finished turn's: the message and the title it gave (indexed with the reply: None).
    assert {h.message_id for h in search(user=user, text="everything").hits} == {asked_id(conversation), None}
    assert leases.turns_recover() == 0  # once


def test_a_lease_that_ran_out_in_a_running_process_of_this_host_waits_for_the_turns_own_deadline(
    user: User, conversation: Conversation, settings: Any
) -> None:
    # This process holds the lease and is alive: late renewing (overloaded), not gone.
    reply = crashed_turn(user, conversation)
    late = timezone.now() - timedelta(seconds=5)
    Conversation.objects.filter(pk=conversation.pk).update(lock_expires_at=late)
    assert leases.turns_recover() == 0
    assert Message.objects.get(pk=reply.pk).status == "streaming"
    # Past the turn's own limit it cannot still be running as it should: it is closed.
    stuck = timezone.now() - timedelta(seconds=settings.CHAT_TURN_TIMEOUT + 1)
    Conversation.objects.filter(pk=conversation.pk).update(lock_expires_at=stuck)
    assert leases.turns_recover() == 1
    assert Message.objects.get(pk=reply.pk).status == "interrupted"


def test_a_live_lease_is_left_alone(user: User, conversation: Conversation) -> None:
    reply = crashed_turn(user, conversation)
    assert leases.turns_recover() == 0
    reply.refresh_from_db()
    assert reply.status == "streaming"


def test_a_dead_process_on_this_host_is_recovered_before_its_lease_runs_out(
    user: User, conversation: Conversation
) -> None:
    reply = crashed_turn(user, conversation)
    owner = f"{socket.gethostname()}:{dead_pid()}:0000"
    Conversation.objects.filter(pk=conversation.pk).update(lock_owner=owner)

    assert leases.turns_recover(conversation_id=conversation.pk) == 1
    reply.refresh_from_db()
    assert reply.status == "interrupted"


def test_another_hosts_process_is_trusted_until_its_lease_runs_out(user: User, conversation: Conversation) -> None:
    crashed_turn(user, conversation)
    Conversation.objects.filter(pk=conversation.pk).update(lock_owner=f"elsewhere:{dead_pid()}:0000")
    assert leases.turns_recover() == 0


def test_an_older_reply_left_streaming_under_a_later_turn_is_closed_without_touching_that_turn(
    user: User, conversation: Conversation
) -> None:
    old = crashed_turn(user, conversation)
    Conversation.objects.filter(pk=conversation.pk).update(lock_expires_at=timezone.now() - timedelta(seconds=1))
    live = turn_start(user=user, conversation=conversation, content="Next")  # took the expired lock

    assert leases.turns_recover() == 1
    old.refresh_from_db()
    assert old.status == "interrupted"
    assert [h.message_id for h in search(user=user, text="everything").hits] == [asked_id(conversation)]
    assert [h.message_id for h in search(user=user, text="repl").hits] == [old.pk]
    assert Message.objects.get(pk=live.assistant_message.pk).status == "streaming"
    assert Conversation.objects.get(pk=conversation.pk).lock_token == live.lock_token


async def wait_for_status(message_id: int, status: str, seconds: float = 10) -> Message:
    for _ in range(int(seconds / 0.05)):
        message = await Message.objects.aget(pk=message_id)
        if message.status == status:
            return message
        await asyncio.sleep(0.05)
    raise AssertionError(f"message {message_id} is still {message.status}")


async def test_stop_asked_in_another_process_reaches_the_turn_within_a_heartbeat(
    user: User, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_BACKEND = "tests.chat.fake_tools.StallingModel"
    running = await runner.start_turn(user=user, conversation=conversation, content="Go on")
    # What another process does: it has no handle on the task, only the database.
    assert await sync_to_async(leases.turn_stop_request)(conversation=conversation)

    final = await asyncio.wait_for(running.result(), 5)
    assert final.assistant_message is not None
    assert (final.assistant_message.status, final.assistant_message.content) == ("interrupted", "Partial")
    refreshed = await Conversation.objects.aget(pk=conversation.pk)
    assert (refreshed.lock_token, refreshed.stop_requested) == (None, False)


async def test_a_turn_that_lost_its_lease_stops_and_leaves_the_recovered_reply_alone(
    user: User, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_BACKEND = "tests.chat.fake_tools.StallingModel"
    running = await runner.start_turn(user=user, conversation=conversation, content="Go on")
    message_id = running.message_id
    await asyncio.sleep(1.2)  # the partial text is saved
    # A sweep somewhere decided this process was dead (it was stalled longer than its lease and its deadline).
    stalled = timezone.now() - timedelta(seconds=settings.CHAT_TURN_TIMEOUT)
    await Conversation.objects.filter(pk=conversation.pk).aupdate(lock_expires_at=stalled)
    assert await sync_to_async(leases.turns_recover)() == 1

    await asyncio.wait_for(running.result(), 5)
    message = await Message.objects.aget(pk=message_id)
    assert (message.status, message.content, message.error) == ("interrupted", "Partial", leases.RECOVERED_ERROR)
    state = await AgentState.objects.aget(conversation=conversation)
    assert state.version == 1  # saved once, by the recovery


def test_one_heartbeat_renews_every_turn_of_a_process_and_reports_each(user: User, settings: Any) -> None:
    settings.CHAT_USER_RUN_SLOTS = 3
    from chat.services import conversation_create

    turns = [turn_start(user=user, conversation=conversation_create(user=user), content=f"Turn {i}") for i in range(3)]
    kept, stopped, lost = turns
    Conversation.objects.filter(pk=stopped.conversation.pk).update(stop_requested=True)
    Conversation.objects.filter(pk=lost.conversation.pk).update(lock_token=None)  # recovered elsewhere
    before = timezone.now()
    pulses = [
        leases.Pulse(t.conversation.pk, t.lock_token, t.assistant_message.pk, f"text {i}") for i, t in enumerate(turns)
    ]

    beats = leases.turns_heartbeat(pulses)

    assert beats == {
        kept.conversation.pk: leases.Beat(held=True, stop=False),
        stopped.conversation.pk: leases.Beat(held=True, stop=True),
        lost.conversation.pk: leases.Beat(held=False, stop=False),
    }
    renewed = Conversation.objects.get(pk=kept.conversation.pk).lock_expires_at
    assert renewed is not None and renewed > before
    assert Message.objects.get(pk=kept.assistant_message.pk).content == "text 0"
    unchanged = leases.Pulse(kept.conversation.pk, kept.lock_token, kept.assistant_message.pk, None)
    assert leases.turns_heartbeat([unchanged])[kept.conversation.pk].held
    assert Message.objects.get(pk=kept.assistant_message.pk).content == "text 0"  # None: the text is left as it is


def test_the_heartbeat_costs_the_same_few_statements_however_many_turns_run(
    user: User, settings: Any, django_assert_num_queries: Any
) -> None:
    from chat.services import conversation_create

    settings.CHAT_USER_RUN_SLOTS = 10
    turns = [turn_start(user=user, conversation=conversation_create(user=user), content=f"Turn {i}") for i in range(8)]
    pulses = [leases.Pulse(t.conversation.pk, t.lock_token, t.assistant_message.pk, "text") for t in turns]
    # Its savepoint pair, the texts, the leases, who holds them.
    with django_assert_num_queries(5):
        beats = leases.turns_heartbeat(pulses)
    assert all(beat.held and not beat.stop for beat in beats.values())
