"""Settings → Memory: partials for HTMX, full pages otherwise, ownership, CSRF, methods, query counts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from chat.extensions import TurnContext
from chat.models import Message
from memory import services
from memory.context import memory_block
from memory.models import Memory, MemorySource
from tests.helpers import make_conversation, make_memory, make_message

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
PAGE = "/settings/memory/"


@pytest.fixture
def alice(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def memory(user: User) -> Memory:
    return make_memory(owner=user, content="Prefers small phones, easier to use one-handed")


@pytest.fixture
def old_version(user: User, memory: Memory) -> Memory:
    """An edited-away earlier version of `memory`, in the history."""
    old = make_memory(owner=user, content="Likes small phones")
    Memory.objects.filter(pk=old.pk).update(
        invalid_at=timezone.now(), invalid_reason=Memory.InvalidReason.EDITED, superseded_by=memory
    )
    old.refresh_from_db()
    return old


@pytest.fixture
def foreign(other_user: User) -> Memory:
    return make_memory(owner=other_user, content="Mallory's secret")


def id_urls(memory_id: int) -> list[tuple[str, str, dict[str, str]]]:
    return [
        ("get", reverse("memory:row", args=[memory_id]), {}),
        ("get", reverse("memory:edit", args=[memory_id]), {}),
        ("post", reverse("memory:edit", args=[memory_id]), {"content": "Mine now"}),
        ("get", reverse("memory:delete", args=[memory_id]), {}),
        ("post", reverse("memory:delete", args=[memory_id]), {}),
        ("post", reverse("memory:restore", args=[memory_id]), {}),
    ]


def body(response: Any) -> str:
    return response.content.decode()


# --- access ---------------------------------------------------------------------------------------


def test_every_memory_page_requires_login(client: Client, memory: Memory) -> None:
    pages = [
        ("get", PAGE, {}),
        ("post", reverse("memory:add"), {"content": "x"}),
        ("get", reverse("memory:export"), {}),
    ]
    for method, url, data in [*pages, *id_urls(memory.pk)]:
        response = getattr(client, method)(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


def test_another_users_memory_is_404_on_every_endpoint(alice: Client, foreign: Memory) -> None:
    Memory.objects.filter(pk=foreign.pk).update(invalid_at=timezone.now(), invalid_reason="retracted")
    for method, url, data in id_urls(foreign.pk):
        for headers in ({}, HTMX):
            response = getattr(alice, method)(url, data, headers=headers)
            assert response.status_code == 404, (method, url, headers)
    foreign.refresh_from_db()
    assert foreign.content == "Mallory's secret"
    assert Memory.objects.filter(owner=foreign.owner).count() == 1


def test_every_post_endpoint_refuses_a_request_without_csrf_token(user: User, memory: Memory) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    posts = [
        (reverse("memory:add"), {"content": "Sneaky"}),
        (reverse("memory:edit", args=[memory.pk]), {"content": "Sneaky"}),
        (reverse("memory:delete", args=[memory.pk]), {}),
        (reverse("memory:restore", args=[memory.pk]), {}),
        (reverse("memory:forget"), {}),
        (reverse("memory:switch"), {"enabled": "off"}),
    ]
    for url, data in posts:
        for headers in ({}, HTMX):
            assert client.post(url, data, headers=headers).status_code == 403, url
    memory.refresh_from_db()
    assert memory.is_active and memory.content.startswith("Prefers small phones")
    assert Memory.objects.count() == 1
    user.refresh_from_db()
    assert user.memory_enabled


def test_wrong_methods_answer_405(alice: Client, memory: Memory) -> None:
    wrong = [
        ("post", PAGE),
        ("get", reverse("memory:add")),
        ("get", reverse("memory:restore", args=[memory.pk])),
        ("get", reverse("memory:switch")),
        ("post", reverse("memory:export")),
        ("post", reverse("memory:notices")),
        ("post", reverse("memory:row", args=[memory.pk])),
        ("put", reverse("memory:edit", args=[memory.pk])),
        ("delete", reverse("memory:delete", args=[memory.pk])),
    ]
    for method, url in wrong:
        assert getattr(alice, method)(url).status_code == 405, (method, url)


# --- the page -------------------------------------------------------------------------------------


def test_page_is_a_full_page_and_the_search_gets_just_the_list(alice: Client, user: User, memory: Memory) -> None:
    make_memory(owner=user, content="Is vegetarian")
    page = body(alice.get(PAGE))
    assert "<html" in page and 'id="memory-list"' in page and "Is vegetarian" in page
    assert "Settings" in page and "Back to chat" in page  # the app header and the sidebar
    response = alice.get(PAGE, {"q": "PHONES"}, headers=HTMX)
    assert "HX-Request" in response["Vary"]  # a cache never serves the partial as the page
    partial = body(response)
    assert "<html" not in partial
    assert partial.lstrip().startswith('<ul id="memory-list"')
    assert "Prefers small phones" in partial and "Is vegetarian" not in partial


def test_search_with_no_match_says_so(alice: Client, memory: Memory) -> None:
    partial = body(alice.get(PAGE, {"q": "kayaks"}, headers=HTMX))
    assert "No active memory contains “kayaks”." in partial
    assert "Nothing in History contains “kayaks”." in partial
    assert "0 active memories and 0 in History match “kayaks”." in partial


def test_search_matches_source_excerpts_and_filters_history(
    alice: Client, user: User, memory: Memory, old_version: Memory
) -> None:
    conversation = make_conversation(owner=user)
    said = make_message(conversation=conversation, content="My thumb hurts on big screens")
    other = make_memory(owner=user, content="Is vegetarian")
    MemorySource.objects.create(memory=memory, message=said)
    partial = body(alice.get(PAGE, {"q": "thumb"}, headers=HTMX))
    active = partial[: partial.index('id="memory-history"')]
    assert "Prefers small phones" in active and other.content not in active
    history = partial[partial.index('id="memory-history"') :]
    assert "Likes small phones" not in history  # the old version does not match "thumb"
    assert "1 active memory and 0 in History match “thumb”." in partial
    partial = body(alice.get(PAGE, {"q": "likes"}, headers=HTMX))
    assert "Likes small phones" in partial[partial.index('id="memory-history"') :]
    assert "0 active memories and 1 in History match “likes”." in partial


def test_forget_everything_is_disabled_with_no_active_memories(alice: Client) -> None:
    page = body(alice.get(PAGE))
    assert "disabled" in page[page.index('id="memory-forget-button"') :].split(">")[0]
    assert "Nothing to forget right now." in page


def test_active_memories_are_listed_newest_first_with_origin_and_time(alice: Client, user: User) -> None:
    older = make_memory(owner=user, content="Lives in Lyon", origin="extracted")
    newer = make_memory(owner=user, content="Is vegetarian", origin="user")
    Memory.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=3))
    page = body(alice.get(PAGE))
    assert page.index("Is vegetarian") < page.index("Lives in Lyon")
    assert "Learned from chat" in page and "Added by you" in page
    assert "3\xa0days ago" in page  # django.contrib.humanize's naturaltime
    assert re.search(r">(now|\d+\xa0seconds? ago)</time>", page)
    assert f'id="memory-{newer.pk}"' in page


def test_each_source_links_to_its_message_in_its_conversation(alice: Client, user: User, memory: Memory) -> None:
    conversation = make_conversation(owner=user)
    message = make_message(conversation=conversation, content="I've always liked small phones, easy one-handed.")
    memory.sources.add(message)
    page = body(alice.get(PAGE))
    assert f'href="/c/{conversation.pk}/#message-{message.pk}"' in page
    assert "“I&#x27;ve always liked small phones, easy one-handed.”" in page


def test_memory_text_with_html_renders_inert(alice: Client, user: User) -> None:
    make_memory(owner=user, content='Likes <script>alert("x")</script> and <img src=x onerror=alert(1)>')
    conversation = make_conversation(owner=user)
    message = make_message(conversation=conversation, content="<b onmouseover=alert(2)>hi</b>")
    Memory.objects.get(owner=user).sources.add(message)
    for response in (alice.get(PAGE), alice.get(PAGE, {"q": "likes"}, headers=HTMX)):
        text = body(response)
        assert "<script>alert" not in text and "<img src=x" not in text and "<b onmouseover" not in text
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
        assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_empty_states_explain_memory_and_how_to_add_one(alice: Client) -> None:
    page = body(alice.get(PAGE))
    assert "Nothing remembered yet" in page
    assert "add one yourself below" in page
    assert "When a memory is updated, edited or forgotten" in page


def test_empty_state_after_forget_everything_points_to_the_history(alice: Client, user: User, memory: Memory) -> None:
    services.memory_forget_all(user=user)

    page = body(alice.get(PAGE))

    assert "Nothing remembered yet" not in page
    assert "No active memories" in page and "Forgotten ones are in History below" in page


def test_deleting_the_last_active_memory_words_the_empty_state_by_what_is_left(
    alice: Client, user: User, memory: Memory
) -> None:
    kept = make_memory(owner=user, content="Likes tea", invalid_at=timezone.now(), invalid_reason="retracted")
    text = body(alice.post(reverse("memory:delete", args=[memory.pk]), headers=HTMX))
    assert '<li id="memory-empty" class="memory-empty" hx-swap-oob="true">' in text
    assert "No active memories" in text

    text = body(alice.post(reverse("memory:delete", args=[kept.pk]), headers=HTMX))
    assert "Nothing remembered yet" in text  # the history is empty now too


def test_the_status_line_is_in_the_header_not_over_the_page(alice: Client) -> None:
    page = body(alice.get(PAGE))
    header = page[page.index('<header class="chat-header memory-header">') : page.index("</header>")]
    assert 'id="memory-status"' in header


def test_page_shows_the_named_buttons(alice: Client, memory: Memory, old_version: Memory) -> None:
    page = body(alice.get(PAGE))
    for name in ("Edit", "Delete", "Restore", "Delete permanently", "Forget everything", "Export"):
        assert f">{name}</button>" in page or f"{name}</button>" in page, name
    assert 'role="switch"' in page and 'aria-checked="true"' in page


def test_history_shows_why_when_and_what_replaced_it(alice: Client, memory: Memory, old_version: Memory) -> None:
    page = body(alice.get(PAGE))
    history = page[page.index('id="memory-history"') :]
    assert "Likes small phones" in history
    assert "Edited by you" in history
    assert f'<a href="#memory-{memory.pk}">“Prefers small phones, easier to use one-handed”</a>' in history


def test_summary_says_which_memories_every_chat_uses(alice: Client, user: User, memory: Memory) -> None:
    make_memory(owner=user, content="Is vegetarian", pinned=True)
    conversation = make_conversation(owner=user)
    ctx = TurnContext(user=user, conversation=conversation, user_message=make_message(conversation=conversation))
    block = memory_block(ctx)  # a message about nothing in particular: the memories every chat uses
    assert block is not None
    page = body(alice.get(PAGE))
    assert f"{len(block):,} of 4,000 characters" in page
    assert "2</strong> active memories" in page and "1</strong> is used in every chat" in page
    assert "used when a message is about them" in page and "left out" not in page


def test_summary_says_when_pinned_memories_do_not_fit(alice: Client, user: User, settings: Any) -> None:
    settings.MEMORY_PROMPT_MAX_CHARS = 250
    for n in range(4):
        make_memory(owner=user, content=f"Fact {n} " + "x" * 40, pinned=True)
    page = body(alice.get(PAGE))
    assert "don’t all fit" in page and "left out of every chat" in page
    assert "of 250 characters" in page


def test_pinned_memories_come_first_with_when_each_was_last_used(alice: Client, user: User) -> None:
    make_memory(owner=user, content="Older and pinned", pinned=True)
    make_memory(owner=user, content="Newer", last_used_at=timezone.now())
    page = body(alice.get(PAGE))
    assert page.index("Older and pinned") < page.index("Newer")
    assert "last used" in page and "not used yet" in page


def make_memories(user: User, n: int, *, first: int = 0) -> None:
    conversation = make_conversation(owner=user)
    messages = [make_message(conversation=conversation, content=f"I said {i}") for i in range(n)]
    # Distinct contents: the active set holds one memory per content.
    rows = Memory.objects.bulk_create([Memory(owner=user, content=f"Fact {first + i}") for i in range(n)])
    MemorySource.objects.bulk_create(
        [MemorySource(memory=m, message=msg) for m, msg in zip(rows, messages, strict=True)]
    )
    history = Memory.objects.bulk_create(
        [
            Memory(owner=user, content=f"Old fact {i}", invalid_at=timezone.now(), invalid_reason="edited")
            for i in range(n)
        ]
    )
    for old, new in zip(history, rows, strict=True):
        old.superseded_by = new
    Memory.objects.bulk_update(history, ["superseded_by"])


def page_queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(PAGE).status_code == 200
    return len(queries)


@pytest.mark.parametrize("n", [5, 200])
def test_page_query_count_does_not_grow_with_memories(
    alice: Client, user: User, n: int, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    make_memories(user, n)
    # 13, and three for Tidy-up suggestions (its proposals; the memories and vectors its estimate clusters).
    with django_assert_max_num_queries(16):
        page = body(alice.get(PAGE))
    assert page.count('class="memory-row history-row is-view"') == n


def test_page_query_count_is_the_same_for_5_and_200_memories(alice: Client, user: User, other_user: User) -> None:
    make_memories(user, 5)
    few = page_queries(alice)
    make_memories(user, 195, first=5)
    assert page_queries(alice) == few


# --- edit -----------------------------------------------------------------------------------------


def test_edit_swaps_the_row_for_a_form_with_save_and_cancel(alice: Client, memory: Memory) -> None:
    response = alice.get(reverse("memory:edit", args=[memory.pk]), headers=HTMX)
    text = body(response)
    assert response.status_code == 200 and "<html" not in text
    assert text.lstrip().startswith(f'<li id="memory-{memory.pk}" class="memory-row is-editing">')
    assert ">Prefers small phones, easier to use one-handed</textarea>" in text
    assert ">Save</button>" in text and ">Cancel</button>" in text


def test_cancel_swaps_the_row_back(alice: Client, memory: Memory) -> None:
    text = body(alice.get(reverse("memory:row", args=[memory.pk]), headers=HTMX))
    assert f'<li id="memory-{memory.pk}" class="memory-row is-view"' in text and ">Edit</button>" in text


def test_saving_an_edit_creates_a_new_version_and_returns_its_row(alice: Client, user: User, memory: Memory) -> None:
    response = alice.post(reverse("memory:edit", args=[memory.pk]), {"content": "Prefers big screens"}, headers=HTMX)
    new = Memory.objects.get(owner=user, invalid_at__isnull=True)
    memory.refresh_from_db()
    assert new.content == "Prefers big screens" and new.origin == Memory.Origin.USER
    assert memory.invalid_reason == Memory.InvalidReason.EDITED and memory.superseded_by_id == new.pk
    text = body(response)
    assert response.status_code == 200
    assert text.lstrip().startswith(f'<li id="memory-{new.pk}" class="memory-row is-view"')
    assert "Edited by you" in text
    assert 'id="memory-history"' in text and 'hx-swap-oob="true"' in text


def test_an_edit_that_fails_validation_changes_nothing(alice: Client, user: User, memory: Memory) -> None:
    before = list(Memory.objects.values_list("id", "content", "invalid_at"))
    pending = make_message(conversation=make_conversation(owner=user), content="I live in Lyon")
    too_long = "word " * 120
    for content, error in (("   ", "Memory content is empty."), (too_long, "too long")):
        response = alice.post(reverse("memory:edit", args=[memory.pk]), {"content": content}, headers=HTMX)
        text = body(response)
        assert response.status_code == 422
        assert error in text and 'aria-invalid="true"' in text
        assert f">{content}</textarea>" in text  # the typed text is kept
    assert list(Memory.objects.values_list("id", "content", "invalid_at")) == before
    pending.refresh_from_db()
    assert pending.memory_status == Message.MemoryStatus.PENDING


def test_edit_without_javascript_redirects_or_shows_the_form_in_the_page(
    alice: Client, user: User, memory: Memory
) -> None:
    shown = body(alice.get(reverse("memory:edit", args=[memory.pk])))
    assert "<html" in shown and "is-editing" in shown
    invalid = alice.post(reverse("memory:edit", args=[memory.pk]), {"content": ""})
    assert invalid.status_code == 422 and "<html" in body(invalid) and "Memory content is empty." in body(invalid)
    cancelled = alice.post(reverse("memory:edit", args=[memory.pk]), {"content": "Changed", "cancel": "1"})
    assert cancelled.status_code == 302
    assert Memory.objects.get(owner=user).content == memory.content
    saved = alice.post(reverse("memory:edit", args=[memory.pk]), {"content": "Prefers big screens"})
    new = Memory.objects.get(owner=user, invalid_at__isnull=True)
    assert saved.status_code == 302 and saved["Location"] == f"{PAGE}#memory-{new.pk}"


# --- delete ---------------------------------------------------------------------------------------


def test_delete_asks_for_confirmation_first(alice: Client, memory: Memory) -> None:
    text = body(alice.get(reverse("memory:delete", args=[memory.pk]), headers=HTMX))
    assert "Delete this memory permanently?" in text
    assert ">Delete</button>" in text and ">Cancel</button>" in text
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_delete_removes_the_memory_and_its_earlier_versions(alice: Client, memory: Memory, old_version: Memory) -> None:
    response = alice.post(reverse("memory:delete", args=[memory.pk]), headers=HTMX)
    text = body(response)
    assert response.status_code == 200
    assert not Memory.objects.filter(pk__in=[memory.pk, old_version.pk]).exists()
    assert f'id="memory-{memory.pk}"' not in text  # the row is swapped for nothing
    assert 'id="memory-history"' in text and "Likes small phones" not in text


def test_delete_permanently_from_history_returns_the_history(
    alice: Client, memory: Memory, old_version: Memory
) -> None:
    confirm = body(alice.get(reverse("memory:delete", args=[old_version.pk]), headers=HTMX))
    assert ">Delete permanently</button>" in confirm
    response = alice.post(reverse("memory:delete", args=[old_version.pk]), headers=HTMX)
    assert body(response).lstrip().startswith('<section id="memory-history"')
    assert Memory.objects.filter(pk=memory.pk, invalid_at__isnull=True).exists()
    assert not Memory.objects.filter(pk=old_version.pk).exists()


def test_delete_without_javascript_confirms_in_the_page_then_redirects(alice: Client, memory: Memory) -> None:
    assert "Delete this memory permanently?" in body(alice.get(reverse("memory:delete", args=[memory.pk])))
    response = alice.post(reverse("memory:delete", args=[memory.pk]))
    assert response.status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert "Memory deleted permanently." in body(alice.get(PAGE))


# --- restore, add, forget, switch, export --------------------------------------------------------


def test_restore_makes_an_old_version_active_again(
    alice: Client, user: User, memory: Memory, old_version: Memory
) -> None:
    response = alice.post(reverse("memory:restore", args=[old_version.pk]), headers=HTMX)
    restored = Memory.objects.get(owner=user, invalid_at__isnull=True)
    assert restored.content == "Likes small phones" and restored.origin == Memory.Origin.RESTORED
    text = body(response)
    assert text.lstrip().startswith('<section id="memory-history"')
    assert '<ul id="memory-list"' in text and f'id="memory-{restored.pk}"' in text


def test_restore_refusal_is_shown_and_changes_nothing(alice: Client, user: User, memory: Memory) -> None:
    duplicate = make_memory(owner=user, content=memory.content, invalid_at=timezone.now(), invalid_reason="retracted")
    response = alice.post(reverse("memory:restore", args=[duplicate.pk]), headers=HTMX)
    assert response.status_code == 409
    assert response["HX-Retarget"] == "#memory-status"
    assert "already says exactly this" in body(response)
    assert Memory.objects.filter(owner=user, invalid_at__isnull=True).count() == 1


def test_add_inserts_a_row_and_keeps_the_text_on_error(alice: Client, user: User) -> None:
    response = alice.post(reverse("memory:add"), {"content": "Prefers metric units"}, headers=HTMX)
    added = Memory.objects.get(owner=user)
    assert added.origin == Memory.Origin.USER
    text = body(response)
    assert text.lstrip().startswith('<form id="memory-add"')
    assert 'hx-swap-oob="afterbegin:#memory-list"' in text and f'id="memory-{added.pk}"' in text
    assert "Added by you" in text
    invalid = alice.post(reverse("memory:add"), {"content": "x" * 501}, headers=HTMX)
    assert invalid.status_code == 422 and "too long" in body(invalid) and "x" * 501 in body(invalid)
    duplicate = alice.post(reverse("memory:add"), {"content": "Prefers metric units"}, headers=HTMX)
    assert duplicate.status_code == 422 and "already says exactly this" in body(duplicate)
    assert Memory.objects.filter(owner=user).count() == 1


def test_add_without_javascript_redirects(alice: Client, user: User) -> None:
    response = alice.post(reverse("memory:add"), {"content": "Is vegetarian"})
    assert response.status_code == 302 and Memory.objects.filter(owner=user, content="Is vegetarian").exists()


def test_forget_everything_confirmation_names_the_count(alice: Client, user: User, memory: Memory) -> None:
    make_memory(owner=user, content="Is vegetarian")
    text = body(alice.get(reverse("memory:forget"), headers=HTMX))
    assert "Forget all 2 active memories?" in text and ">Forget everything</button>" in text
    assert "Forget all 2 active memories?" in body(alice.get(reverse("memory:forget")))


def test_forget_everything_moves_memories_to_history_or_purges(alice: Client, user: User, memory: Memory) -> None:
    response = alice.post(reverse("memory:forget"))
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.invalid_reason == Memory.InvalidReason.CLEARED
    alice.post(reverse("memory:forget"), {"purge": "1"})
    assert not Memory.objects.filter(owner=user).exists()


def test_switch_turns_memory_off_and_explains_it(alice: Client, user: User) -> None:
    response = alice.post(reverse("memory:switch"), {"enabled": "off"}, headers=HTMX)
    user.refresh_from_db()
    assert not user.memory_enabled
    text = body(response)
    assert 'aria-checked="false"' in text and "nothing is learned and nothing is used" in text
    assert 'id="memory-summary"' in text
    alice.post(reverse("memory:switch"), {"enabled": "on"})
    user.refresh_from_db()
    assert user.memory_enabled
    assert alice.post(reverse("memory:switch"), {"enabled": "maybe"}).status_code == 400


def test_export_downloads_everything_as_json(
    alice: Client, memory: Memory, old_version: Memory, foreign: Memory
) -> None:
    response = alice.get(reverse("memory:export"))
    assert response["Content-Type"].startswith("application/json")
    assert response["Content-Disposition"].startswith('attachment; filename="memora-memories-')
    data = json.loads(response.content)
    assert data["active"] == 1
    assert {m["content"] for m in data["memories"]} == {memory.content, old_version.content}


def test_user_writes_here_skip_older_pending_messages(alice: Client, user: User, memory: Memory) -> None:
    """User control wins over the past (the service's rule, reached through the page)."""
    pending = make_message(conversation=make_conversation(owner=user), content="I live in Lyon")
    alice.post(reverse("memory:delete", args=[memory.pk]), headers=HTMX)
    pending.refresh_from_db()
    assert pending.memory_status == Message.MemoryStatus.SKIPPED
    assert services.memory_content_clean("  a  b ") == "a b"


def test_search_matches_words_apart_and_across_a_line_break_in_the_source(
    alice: Client, user: User, memory: Memory
) -> None:
    said = make_message(conversation=make_conversation(owner=user), content="My thumb\nhurts on big screens")
    MemorySource.objects.create(memory=memory, message=said)
    for query in ("thumb hurts", "screens thumb", "small thumb"):
        assert "1 active memory and 0 in History" in body(alice.get(PAGE, {"q": query}, headers=HTMX)), query
    assert "0 active memories" in body(alice.get(PAGE, {"q": "thumb kayaks"}, headers=HTMX))


def test_a_restored_wording_is_listed_once_and_history_says_what_replaced_a_forgotten_one(
    alice: Client, user: User
) -> None:
    first = services.memory_add(user=user, content="Likes small phones")
    second = services.memory_edit(user=user, memory=first, content="Likes big phones")
    Memory.objects.filter(pk=second.pk).update(invalid_at=timezone.now(), invalid_reason="retracted")
    services.memory_restore(user=user, memory=Memory.objects.get(pk=first.pk))
    page = body(alice.get(PAGE))
    history = page[page.index('id="memory-history"') :]
    assert f'id="memory-{first.pk}"' not in history  # in use again: the active list has it
    assert page.count(">Likes small phones</p>") == 1
    second_row = history[history.index(f'id="memory-{second.pk}"') :].split("</li>")[0]
    assert "Later you restored an earlier version" in second_row and "“Likes small phones”" in second_row
    assert "Restored later as" not in history


def test_a_wording_restored_and_replaced_again_is_listed_once_in_history(alice: Client, user: User) -> None:
    first = services.memory_add(user=user, content="Likes small phones")
    second = services.memory_edit(user=user, memory=first, content="Likes big phones")
    again = services.memory_restore(user=user, memory=Memory.objects.get(pk=first.pk))
    services.memory_edit(user=user, memory=again, content="Likes foldable phones")
    page = body(alice.get(PAGE))
    history = page[page.index('id="memory-history"') :]
    assert history.count(">Likes small phones</p>") == 1  # the restored copy, not also the version it copied
    assert f'id="memory-{again.pk}"' in history and f'id="memory-{first.pk}"' not in history
    assert f'id="memory-{second.pk}"' in history
    found = body(alice.get(PAGE, {"q": "small"}, headers=HTMX))
    assert "0 active memories and 1 in History" in found


def test_a_refused_add_empties_the_status_line(alice: Client) -> None:
    response = alice.post(reverse("memory:add"), {"content": "x" * 501}, headers=HTMX)
    assert response.status_code == 422
    assert '<div hx-swap-oob="innerHTML:#memory-status"><span></span></div>' in body(response)
