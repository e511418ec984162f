"""Conversation search (chat/search/, GET /api/search): what is found, for whom, and what is not.

The same tests run on SQLite (FTS5) and, in the PostgreSQL pass, on its built-in full-text search."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat import services
from chat.models import Conversation, Message, SearchEntry
from chat.search.query import QUERY_MAX_CHARS
from chat.turn import transactions

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(user: User) -> Conversation:
    """Titled, so that only the messages match (a first message titles an untitled conversation)."""
    return services.conversation_create(user=user, title="Notes")


def exchange(user: User, conversation: Conversation, text: str, reply: str = "Noted.") -> tuple[Message, Message]:
    """One turn as chat runs it: the user's message, then the reply saved when it completes."""
    started = transactions.turn_start(user=user, conversation=conversation, content=text)
    answer = transactions.turn_finish(
        turn=started, status="complete", content=reply, new_items=[{"role": "assistant", "content": reply}]
    )
    return started.user_message, answer


def found(client: Client, q: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get("/api/search", {"q": q, **params})  # type: ignore[arg-type]
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def test_english_words_are_found_in_any_form_with_the_match_marked(
    api_client: Client, user: User, conversation: Conversation
) -> None:
    said, replied = exchange(user, conversation, "I've always liked small phones.", "Small **phones** are rare now.")
    hits = found(api_client, "Phone")
    assert [(h["message_id"], h["role"]) for h in hits] == [(replied.pk, "assistant"), (said.pk, "user")]
    assert hits[0]["excerpt"] == "Small phones are rare now."  # plain text: no Markdown
    assert [hits[1]["excerpt"][a:b] for a, b in hits[1]["highlights"]] == ["phones"]
    assert hits[1]["conversation_id"] == str(conversation.pk)
    assert hits[1]["conversation_title"] == "Notes"
    assert [h["message_id"] for h in found(api_client, "liking small")] == [said.pk]
    assert found(api_client, "small tablets") == []  # every word must match


def test_two_character_chinese_words_match_inside_longer_text(
    api_client: Client, user: User, conversation: Conversation
) -> None:
    said, _ = exchange(user, conversation, "我一直喜欢小屏智能手机，单手好用。")
    for q in ("手机", "智能手机", "单手", "喜欢 手机"):
        hits = found(api_client, q)
        assert [h["message_id"] for h in hits] == [said.pk], q
    hit = found(api_client, "手机")[0]
    assert [hit["excerpt"][a:b] for a, b in hit["highlights"]] == ["手机"]
    assert found(api_client, "电脑") == []


def test_a_title_hit_has_no_message(api_client: Client, user: User, conversation: Conversation) -> None:
    untitled = services.conversation_create(user=user)
    exchange(user, untitled, "Somewhere quiet for a weekend?")
    assert [h["message_id"] for h in found(api_client, "quiet")] == [untitled.messages.first().pk, None]  # type: ignore[union-attr]
    services.conversation_rename(conversation=conversation, title="Trip ideas")
    hits = found(api_client, "trip")
    assert [(h["message_id"], h["role"], h["excerpt"]) for h in hits] == [(None, None, "Trip ideas")]
    services.conversation_rename(conversation=conversation, title="Weekend plans")
    assert found(api_client, "trip") == []


def test_another_users_words_are_never_found(
    api_client: Client, user: User, other_user: User, conversation: Conversation
) -> None:
    theirs = services.conversation_create(user=other_user, title="Mallory's phones")
    exchange(other_user, theirs, "My phone number is secret", "Your phone is safe.")
    response = api_client.get("/api/search", {"q": "phone"})
    assert (response.json(), response["X-Total-Count"]) == ([], "0")
    mine, _ = exchange(user, conversation, "Which phone?")
    assert [h["message_id"] for h in found(api_client, "phone")] == [mine.pk]


def test_a_deleted_conversations_words_are_gone_from_the_index(api_client: Client, user: User) -> None:
    untitled = services.conversation_create(user=user)
    exchange(user, untitled, "Peanuts make me ill", "Then avoid peanuts.")
    assert len(found(api_client, "peanut")) == 3  # the message, the reply and the title it gave
    services.conversation_delete(conversation=untitled)
    assert found(api_client, "peanut") == []
    assert not SearchEntry.objects.filter(conversation_id=untitled.pk).exists()


def test_a_deleted_account_leaves_no_entries(user: User, conversation: Conversation) -> None:
    exchange(user, conversation, "Peanuts make me ill")
    user.delete()
    assert not SearchEntry.objects.exists()


def test_pages_newest_first_with_the_total(api_client: Client, user: User, conversation: Conversation) -> None:
    said = [exchange(user, conversation, f"coffee note {n}", "ok")[0] for n in range(5)]
    response = api_client.get("/api/search", {"q": "coffee", "limit": "2", "offset": "1"})
    assert response["X-Total-Count"] == "5"
    assert [h["message_id"] for h in response.json()] == [said[3].pk, said[2].pk]
    assert found(api_client, "coffee", offset=5) == []


def test_the_total_counts_only_the_users_own_visible_matches(
    api_client: Client, user: User, other_user: User, conversation: Conversation
) -> None:
    theirs = services.conversation_create(user=other_user, title="Their tea")
    exchange(other_user, theirs, "tea for them", "tea again")
    for n in range(3):
        exchange(user, conversation, f"tea note {n}", "ok")
    response = api_client.get("/api/search", {"q": "tea", "limit": "1"})
    assert response["X-Total-Count"] == "3"  # their three matches (title included) are not counted
    temporary = services.conversation_create(user=user, temporary=True)
    exchange(user, temporary, "tea in secret", "secret tea")
    response = api_client.get("/api/search", {"q": "tea", "limit": "1"})
    assert response["X-Total-Count"] == "3"  # nor those of a temporary conversation
    assert len(found(api_client, "tea", limit=10)) == 3


def test_the_total_of_a_search_from_a_temporary_conversation_counts_its_matches(
    user: User, conversation: Conversation
) -> None:
    from chat.search.query import search

    exchange(user, conversation, "tea note")
    temporary = services.conversation_create(user=user, temporary=True, title="Private")
    exchange(user, temporary, "tea in secret")
    page = search(user=user, text="tea", current=temporary)
    assert (page.total, len(page.hits)) == (2, 2)
    assert search(user=user, text="tea").total == 1


def test_the_total_of_a_project_search_counts_that_projects_matches(
    api_client: Client, user: User, conversation: Conversation
) -> None:
    from chat.models import Project

    project = Project.objects.create(owner=user, name="Garden")
    planted = services.conversation_create(user=user, title="Beds", project=project)
    exchange(user, planted, "tomato seedlings")
    exchange(user, conversation, "tomato soup")
    response = api_client.get("/api/search", {"q": "tomato", "project": str(project.pk)})
    assert (response["X-Total-Count"], len(response.json())) == ("1", 1)
    assert api_client.get("/api/search", {"q": "tomato"})["X-Total-Count"] == "2"


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"q": ""}, 400),
        ({"q": "   "}, 400),
        ({}, 400),
        ({"q": "?!…"}, 400),
        ({"q": "x" * (QUERY_MAX_CHARS + 1)}, 400),
        ({"q": "phone", "limit": 0}, 422),
        ({"q": "phone", "limit": 101}, 422),
        ({"q": "phone", "offset": -1}, 422),
        ({"q": "phone", "offset": 10_001}, 422),
    ],
)
def test_bad_input_is_refused_with_a_detail(api_client: Client, params: dict[str, Any], status: int) -> None:
    response = api_client.get("/api/search", params)
    assert response.status_code == status
    assert "detail" in response.json()


def test_anonymous_search_is_refused(client: Client) -> None:
    assert client.get("/api/search", {"q": "phone"}).status_code == 401


def test_temporary_conversations_are_not_searched(api_client: Client, user: User) -> None:
    temporary = services.conversation_create(user=user, temporary=True)
    exchange(user, temporary, "A secret about bicycles")
    assert found(api_client, "bicycle") == []


def test_a_reply_written_again_is_found_by_its_new_words_only(
    api_client: Client, user: User, conversation: Conversation
) -> None:
    started = transactions.turn_start(user=user, conversation=conversation, content="Tell me")
    transactions.turn_finish(turn=started, status="interrupted", content="About zebras", new_items=[])
    assert len(found(api_client, "zebra")) == 1
    retry = transactions.turn_retry_start(user=user, conversation=conversation)
    assert found(api_client, "zebra") == []  # emptied while it is written again
    transactions.turn_finish(turn=retry, status="complete", content="About giraffes", new_items=[])
    assert [h["message_id"] for h in found(api_client, "giraffe")] == [retry.assistant_message.pk]


def test_the_last_word_matches_while_it_is_being_typed(
    api_client: Client, user: User, conversation: Conversation
) -> None:
    said, _ = exchange(user, conversation, "Recommend a smartphone")
    assert [h["message_id"] for h in found(api_client, "recommend smar")] == [said.pk]
    assert found(api_client, "smar ") == []  # a finished word is a whole word


def test_search_takes_the_same_queries_whatever_it_finds(
    api_client: Client, user: User, conversation: Conversation, django_assert_max_num_queries: Any
) -> None:
    for n in range(12):
        exchange(user, conversation, f"tea number {n}", f"tea reply {n}")
    with django_assert_max_num_queries(4):  # token, token last-used, the count, the page
        assert len(found(api_client, "tea", limit=50)) == 24


def test_sqlite_fts_rows_leave_with_their_entries(user: User, conversation: Conversation) -> None:
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 table")
    exchange(user, conversation, "Peanuts make me ill")

    def indexed() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM chat_search_fts WHERE chat_search_fts MATCH 'peanut'")
            return int(cursor.fetchone()[0])

    assert indexed() == 1
    services.conversation_delete(conversation=conversation)
    assert indexed() == 0


def test_sqlite_fts_rows_carry_their_owners_word(user: User, other_user: User, conversation: Conversation) -> None:
    """The full-text index alone tells whose an entry is (chat/search/sqlite.py): each row is indexed with
    its owner's word, added and removed by the triggers with the row."""
    from django.db import connection

    from chat.search.sqlite import owner_term

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 table")
    said, _ = exchange(user, conversation, "Peanuts make me ill", "Then avoid peanuts.")

    def indexed(words: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM chat_search_fts WHERE chat_search_fts MATCH %s", [words])
            return int(cursor.fetchone()[0])

    mine, theirs = f'"{owner_term(user.pk)}"', f'"{owner_term(other_user.pk)}"'
    assert (indexed(f"{mine} AND peanut"), indexed(f"{theirs} AND peanut")) == (2, 0)
    assert indexed(mine) == SearchEntry.objects.filter(user=user).count()
    said.delete()
    assert indexed(f"{mine} AND peanut") == 1


def test_a_retry_that_titles_the_conversation_makes_the_title_searchable_with_its_reply(
    api_client: Client, user: User
) -> None:
    untitled = services.conversation_create(user=user)
    started = transactions.turn_start(user=user, conversation=untitled, content="Tell me about okapis")
    transactions.turn_finish(turn=started, status="error", content="", error="Failed.", new_items=[])
    Conversation.objects.filter(pk=untitled.pk).update(title="")  # the title cleared since
    retry = transactions.turn_retry_start(user=user, conversation=Conversation.objects.get(pk=untitled.pk))
    assert retry.retitled
    transactions.turn_finish(turn=retry, status="complete", content="Striped legs.", new_items=[])
    assert None in [h["message_id"] for h in found(api_client, "okapi")]  # the title hit
