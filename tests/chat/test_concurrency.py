"""Turn starts racing each other in real threads, each with its own database connection.

The outcome is the same whatever the interleaving: one turn per conversation, at most
CHAT_USER_RUN_SLOTS per user. On PostgreSQL the per-user row lock is what makes that true.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections, transaction

from accounts.models import User
from chat.models import Conversation, Message
from chat.services import ConversationBusy, RunSlotsFull, TurnRejected, conversation_create
from chat.turn.transactions import turn_start

pytestmark = pytest.mark.django_db(transaction=True)


def race(*jobs: Callable[[], Any]) -> list[Any]:
    """Run the jobs in threads released together; each result is a value or the exception raised."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def run(i: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait(10)
            results[i] = job()
        except Exception as exc:
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_simultaneous_sends_to_one_conversation_let_exactly_one_through(user: User) -> None:
    conversation = conversation_create(user=user)
    results = race(*[lambda i=i: turn_start(user=user, conversation=conversation, content=f"m{i}") for i in range(4)])
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert all(isinstance(r, ConversationBusy) for r in results if isinstance(r, Exception))
    assert Message.objects.filter(role="user").count() == 1


def test_simultaneous_sends_of_one_user_never_exceed_the_run_slots(user: User, settings: Any) -> None:
    settings.CHAT_USER_RUN_SLOTS = 2
    conversations = [conversation_create(user=user) for _ in range(4)]
    results = race(*[lambda c=c: turn_start(user=user, conversation=c, content="hi") for c in conversations])
    assert sum(not isinstance(r, Exception) for r in results) == 2
    assert all(isinstance(r, RunSlotsFull) for r in results if isinstance(r, Exception))
    assert Conversation.objects.filter(lock_token__isnull=False).count() == 2
    assert Message.objects.filter(role="user").count() == 2


@pytest.mark.postgres
def test_a_second_start_waits_for_the_first_to_commit_before_counting_slots(user: User, settings: Any) -> None:
    # Without the per-user row lock the second start would count slots while the first is uncommitted,
    # see none taken, and both would run.
    settings.CHAT_USER_RUN_SLOTS = 1
    first, second = conversation_create(user=user), conversation_create(user=user)
    first_started, may_commit = threading.Event(), threading.Event()

    def hold_first_open() -> None:
        with transaction.atomic():
            turn_start(user=user, conversation=first, content="first")
            first_started.set()
            may_commit.wait(20)

    def start_second() -> Any:
        first_started.wait(20)
        return turn_start(user=user, conversation=second, content="second")

    def release_when_second_waits() -> None:
        first_started.wait(20)
        _wait_until(lambda: _waiting_lock_count() > 0)
        may_commit.set()

    results = race(hold_first_open, start_second, release_when_second_waits)
    assert isinstance(results[1], RunSlotsFull), results
    assert Message.objects.filter(conversation=second).count() == 0


def _waiting_lock_count() -> int:
    """Lock waits of the sessions on this test's database: not those of other databases on the server
    (the parallel workers' own test databases, other runs)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)"
            " WHERE NOT granted AND datname = current_database()"
        )
        return int(cursor.fetchone()[0])


def _wait_until(condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)
    connections.close_all()


def test_rejections_are_turn_rejected() -> None:
    assert issubclass(ConversationBusy, TurnRejected) and issubclass(RunSlotsFull, TurnRejected)
