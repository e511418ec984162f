"""The chat services: conversations, and the two transactions that bracket a turn."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from accounts.models import User
from chat import services
from chat.models import AgentState, Conversation, Message, SearchEntry
from chat.search.query import search
from chat.services import (
    ConversationBusy,
    InvalidMessage,
    RunSlotsFull,
    conversation_create,
    conversation_delete,
    conversation_rename,
    message_content_clean,
    title_from,
)
from chat.turn import transactions
from chat.turn.transactions import turn_finish, turn_start
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db


def _finish(started: transactions.StartedTurn, content: str = "Hi!") -> Message:
    return turn_finish(
        turn=started, status="complete", content=content, new_items=[{"role": "assistant", "content": content}]
    )


def test_conversation_create_makes_an_empty_agent_state(user: User) -> None:
    conversation = conversation_create(user=user, title="  Phones  ", temporary=True)
    assert (conversation.title, conversation.temporary, conversation.owner) == ("Phones", True, user)
    state = AgentState.objects.get(conversation=conversation)
    assert (state.context, state.version) == ([], 0)


def test_conversation_rename_and_delete(conversation: Conversation) -> None:
    MessageFactory(conversation=conversation)
    conversation_rename(conversation=conversation, title=" New name ")
    assert Conversation.objects.get(pk=conversation.pk).title == "New name"
    conversation_delete(conversation=conversation)
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()
    assert not AgentState.objects.exists()


@pytest.mark.parametrize(
    "content, error",
    [
        (None, "must be a string"),
        (42, "must be a string"),
        ("", "is empty"),
        (" \n\t", "is empty"),
        ("x" * 8001, "8,001 characters; the limit is 8,000"),
    ],
)
def test_message_content_clean_says_what_is_wrong(content: Any, error: str) -> None:
    with pytest.raises(InvalidMessage, match=error):
        message_content_clean(content)


def test_message_content_clean_keeps_valid_text_as_is() -> None:
    assert message_content_clean("  hello  ") == "  hello  "
    assert message_content_clean("x" * 8000) == "x" * 8000


def test_title_from_collapses_whitespace_and_cuts_at_a_word() -> None:
    assert title_from("  a \n b  ") == "a b"
    long = "word " * 30
    title = title_from(long)
    assert title.endswith("…") and len(title) <= services.TITLE_MAX + 1
    assert not title[:-1].endswith(" ")


def test_title_from_drops_markdown_syntax() -> None:
    assert title_from("# Plan a **weekend** in `Lisbon`") == "Plan a weekend in Lisbon"
    assert title_from("> see [the notes](https://example.com) _today_") == "see the notes today"
    assert title_from("- one\n- two") == "one two"
    assert title_from("2*3*4 and snake_case_name") == "2*3*4 and snake_case_name"  # not emphasis


def test_turn_start_saves_the_user_message_first_and_takes_the_lock(user: User, conversation: Conversation) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    conversation.refresh_from_db()
    assert conversation.lock_token == started.lock_token
    assert conversation.lock_expires_at is not None
    assert started.user_message.content == "Hello"
    assert started.assistant_message.status == "streaming"
    assert (started.context, started.state_version) == ([], 0)


def test_busy_wins_over_full_run_slots(user: User, settings: Any) -> None:
    settings.CHAT_USER_RUN_SLOTS = 1
    first = conversation_create(user=user)
    turn_start(user=user, conversation=first, content="a")
    with pytest.raises(ConversationBusy):
        turn_start(user=user, conversation=first, content="b")
    with pytest.raises(RunSlotsFull, match="1 reply being written"):
        turn_start(user=user, conversation=conversation_create(user=user), content="c")
    assert Message.objects.count() == 2


def test_turn_finish_saves_reply_and_state_and_releases_the_lock(user: User, conversation: Conversation) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    message = _finish(started)
    message.refresh_from_db()
    assert (message.content, message.status) == ("Hi!", "complete")
    state = AgentState.objects.get(conversation=conversation)
    assert state.context == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]
    assert state.version == 1
    conversation.refresh_from_db()
    assert (conversation.lock_token, conversation.lock_expires_at) == (None, None)


def test_turn_finish_with_a_stale_state_version_leaves_the_newer_state_alone(
    user: User, conversation: Conversation
) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    other = [{"role": "user", "content": "other"}]
    AgentState.objects.filter(conversation=conversation).update(context=other, version=5)
    message = _finish(started)
    assert message.status == "error"
    assert "conversation changed" in message.error
    assert Message.objects.get(pk=message.pk).status == "error"
    state = AgentState.objects.get(conversation=conversation)
    assert (state.context, state.version) == ([{"role": "user", "content": "other"}], 5)


def test_turn_finish_after_the_conversation_was_deleted_does_nothing(
    user: User,
    conversation: Conversation,
    turn_hook_calls: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    conversation_delete(conversation=conversation)
    with django_capture_on_commit_callbacks(execute=True):
        _finish(started)
    assert not Message.objects.exists()
    assert turn_hook_calls == []


def test_turn_finish_does_not_release_a_lock_another_turn_took(user: User, conversation: Conversation) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    Conversation.objects.filter(pk=conversation.pk).update(lock_token="00000000-0000-0000-0000-000000000001")
    _finish(started)
    assert str(Conversation.objects.get(pk=conversation.pk).lock_token) == "00000000-0000-0000-0000-000000000001"


# --- the post-turn hook: after commit, never on rollback ---


def test_post_turn_hook_fires_only_once_the_transaction_commits(
    user: User,
    conversation: Conversation,
    turn_hook_calls: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        message = _finish(started)
        assert turn_hook_calls == []  # still inside the transaction
    assert len(callbacks) == 1
    assert turn_hook_calls == [
        {
            "user_id": user.pk,
            "conversation_id": conversation.pk,
            "user_message_id": started.user_message.pk,
            "assistant_message_id": message.pk,
            "status": "complete",
        }
    ]


def test_post_turn_hook_does_not_fire_when_the_transaction_rolls_back(
    user: User,
    conversation: Conversation,
    turn_hook_calls: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    started = turn_start(user=user, conversation=conversation, content="Hello")
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        _finish(started)
        raise RuntimeError("the commit fails")
    assert callbacks == []
    assert turn_hook_calls == []
    assert Message.objects.get(pk=started.assistant_message.pk).status == "streaming"
    assert AgentState.objects.get(conversation=conversation).version == 0


@pytest.mark.django_db(transaction=True)
def test_post_turn_hook_waits_for_the_outermost_real_commit(user: User, turn_hook_calls: list[dict[str, Any]]) -> None:
    conversation = conversation_create(user=user)
    started = turn_start(user=user, conversation=conversation, content="Hello")
    with transaction.atomic():
        _finish(started)
        assert turn_hook_calls == []
    assert [c["status"] for c in turn_hook_calls] == ["complete"]

    again = turn_start(user=user, conversation=conversation, content="Again")
    with pytest.raises(RuntimeError), transaction.atomic():
        _finish(again)
        raise RuntimeError("rolled back")
    assert len(turn_hook_calls) == 1
    conversation.refresh_from_db()
    assert conversation.lock_token == again.lock_token  # the rollback kept the lock: the state is unchanged


def test_turn_start_titles_an_untitled_conversation_only(user: User, conversation: Conversation) -> None:
    started = turn_start(user=user, conversation=conversation, content="  Small   phones? ")
    assert started.conversation.title == "Small phones?"
    assert Conversation.objects.get(pk=conversation.pk).title == "Small phones?"


def test_turn_start_keeps_a_title_set_meanwhile_even_through_a_stale_object(user: User) -> None:
    stale = conversation_create(user=user)
    conversation_rename(conversation=Conversation.objects.get(pk=stale.pk), title="Chosen by me")
    turn_start(user=user, conversation=stale, content="Hello")
    assert Conversation.objects.get(pk=stale.pk).title == "Chosen by me"


def test_turn_start_reads_the_memory_switch_from_the_database_not_a_stale_user(user: User) -> None:
    conversation = conversation_create(user=user)
    User.objects.filter(pk=user.pk).update(memory_enabled=False)  # switched off elsewhere; `user` is stale
    started = turn_start(user=user, conversation=conversation, content="I like small phones")
    assert started.user_message.memory_status == Message.MemoryStatus.SKIPPED


def test_turn_start_in_a_conversation_deleted_meanwhile_says_it_is_gone_not_busy(user: User) -> None:
    stale = conversation_create(user=user)
    Conversation.objects.filter(pk=stale.pk).delete()
    with pytest.raises(services.ConversationGone):
        turn_start(user=user, conversation=stale, content="Hello?")
    assert not Message.objects.exists()


def test_turn_start_takes_the_lock_and_saves_the_message_in_one_transaction_of_few_queries(
    user: User, conversation: Conversation, django_assert_num_queries: Any
) -> None:
    # Lock the user row (counting recent turn starts in the same statement), take the conversation lock
    # (touching and titling the conversation in the same statement), count run slots, record the turn
    # start, insert both messages at once, read the agent state, and read the user's monthly quota (the
    # usage app's check, one indexed row): seven statements, in one transaction (its
    # savepoint pair here, inside the test's own transaction). Nothing is indexed for search yet: the
    # message and the title are indexed with the reply, off the way to the first token.
    with django_assert_num_queries(9) as captured:
        started = turn_start(user=user, conversation=conversation, content="Hello there")
    statements = [q["sql"].split()[0].upper() for q in captured.captured_queries]
    assert (statements[0], statements[-1]) == ("SAVEPOINT", "RELEASE")
    assert started.user_message.pk < started.assistant_message.pk
    assert started.conversation.title == "Hello there"
    assert (started.context, started.state_version) == ([], 0)
    assert started.retitled
    assert not SearchEntry.objects.filter(conversation=conversation).exists()


def test_a_turns_message_and_the_title_it_gave_become_searchable_with_the_reply(
    user: User, conversation: Conversation
) -> None:
    started = turn_start(user=user, conversation=conversation, content="Zebras at dawn")
    Conversation.objects.filter(pk=conversation.pk).update(title="Renamed meanwhile")  # the user renames it
    _finish(started, "Giraffes too.")
    assert [h.message_id for h in search(user=user, text="renamed").hits] == [None]  # the title as it is now
    assert search(user=user, text="hello").hits == []
    assert [h.message_id for h in search(user=user, text="zebra").hits] == [started.user_message.pk]
    assert [h.message_id for h in search(user=user, text="giraffe").hits] == [started.assistant_message.pk]


# --- Retry: the failed latest reply, written again in place ---


def test_turn_retry_start_reopens_the_failed_reply_for_the_same_message(user: User, conversation: Conversation) -> None:
    _finish(turn_start(user=user, conversation=conversation, content="First"))
    failed = turn_start(user=user, conversation=conversation, content="Second")
    turn_finish(
        turn=failed,
        status="interrupted",
        content="Half",
        error="Stopped.",
        new_items=[{"role": "assistant", "content": "Half [reply cut short]"}],
    )

    retried = transactions.turn_retry_start(
        user=user, conversation=conversation, message_id=failed.assistant_message.pk
    )

    assert retried.retry
    assert (retried.user_message.pk, retried.assistant_message.pk) == (
        failed.user_message.pk,
        failed.assistant_message.pk,
    )
    reply = Message.objects.get(pk=failed.assistant_message.pk)
    assert (reply.status, reply.content, reply.error) == ("streaming", "", "")
    # The state as it was before the failed turn: the retry adds the question back once.
    assert retried.context == [{"role": "user", "content": "First"}, {"role": "assistant", "content": "Hi!"}]
    _finish(retried, "Whole")
    state = AgentState.objects.get(conversation=conversation)
    assert [item["content"] for item in state.context] == ["First", "Hi!", "Second", "Whole"]
    assert Message.objects.filter(conversation=conversation).count() == 4


@pytest.mark.parametrize("case", ["complete", "not the latest", "empty", "busy"])
def test_turn_retry_start_refuses_anything_but_the_failed_latest_reply_and_writes_nothing(
    user: User, conversation: Conversation, case: str
) -> None:
    message_id = None
    if case != "empty":
        started = turn_start(user=user, conversation=conversation, content="Hello")
        if case != "busy":
            status = "complete" if case == "complete" else "error"
            turn_finish(turn=started, status=status, content="", error="x", new_items=[])
        message_id = started.assistant_message.pk - 2 if case == "not the latest" else None
    before = list(Message.objects.values_list("pk", "status", "content"))
    expected = ConversationBusy if case == "busy" else services.NothingToRetry
    with pytest.raises(expected):
        transactions.turn_retry_start(user=user, conversation=conversation, message_id=message_id)
    assert list(Message.objects.values_list("pk", "status", "content")) == before


def test_context_before_drops_only_the_failed_turns_tail() -> None:
    earlier = [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}]
    failed = [{"role": "user", "content": "Q2"}, {"role": "assistant", "content": "A [reply cut short]"}]
    assert transactions.context_before([*earlier, *failed], "Q2") == earlier
    # A turn that failed for length left nothing behind: the tail is an earlier turn's, kept as is.
    assert transactions.context_before(earlier, "Q2") == earlier
    assert transactions.context_before([], "Q2") == []


def test_the_sweep_deletes_temporary_chats_a_day_after_their_last_message(user: User) -> None:
    from datetime import timedelta

    from django.utils import timezone

    old = services.conversation_create(user=user, temporary=True)
    MessageFactory(conversation=old, user=user, content="secret")
    recent = services.conversation_create(user=user, temporary=True)
    MessageFactory(conversation=recent, user=user, content="hello")
    kept = services.conversation_create(user=user)
    MessageFactory(conversation=kept, user=user, content="keep me")
    day_ago = timezone.now() - timedelta(hours=24, minutes=1)
    Message.objects.filter(conversation__in=[old, kept]).update(created_at=day_ago)
    Message.objects.filter(conversation=recent).update(created_at=day_ago + timedelta(minutes=2))
    assert services.temporary_conversations_sweep() == 1
    assert set(Conversation.objects.values_list("pk", flat=True)) == {recent.pk, kept.pk}
    assert not Message.objects.filter(content="secret").exists()
    assert services.temporary_conversations_sweep() == 0  # idempotent
