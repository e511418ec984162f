"""Chat pages: login required, other users' conversations are 404, partials, constant query counts."""

from __future__ import annotations

from typing import Any, cast

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from chat.models import Conversation, Message
from chat.services import conversation_rename
from chat.views import DRAFT_SESSION_KEY
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def make_conversation(**kwargs: Any) -> Conversation:
    return cast(Conversation, ConversationFactory(**kwargs))


def make_message(**kwargs: Any) -> Message:
    return cast(Message, MessageFactory(**kwargs))


@pytest.fixture
def alice_client(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def conversation(conversation: Conversation) -> Conversation:
    """The shared conversation, titled: these tests read and change its title."""
    return conversation_rename(conversation=conversation, title="Phones")


@pytest.fixture
def foreign(other_user: Any) -> Conversation:
    return make_conversation(owner=other_user, title="Mallory's secrets")


def conversation_urls(conversation: Conversation, message_id: int = 1) -> list[tuple[str, str]]:
    pk = conversation.pk
    return [
        ("get", reverse("chat:conversation", args=[pk])),
        ("get", reverse("chat:conversation_rename", args=[pk])),
        ("post", reverse("chat:conversation_rename", args=[pk])),
        ("get", reverse("chat:conversation_delete", args=[pk])),
        ("post", reverse("chat:conversation_delete", args=[pk])),
        ("get", reverse("chat:message", args=[pk, message_id])),
    ]


@pytest.mark.needs_memory
def test_every_page_requires_login(client: Client, conversation: Conversation) -> None:
    urls = [("get", "/"), ("post", reverse("chat:conversation_new")), ("get", "/settings/memory/")]
    for method, url in [*urls, *conversation_urls(conversation)]:
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


def test_another_users_conversation_is_404_on_every_page_and_htmx_endpoint(
    alice_client: Client, foreign: Conversation
) -> None:
    message = make_message(conversation=foreign)
    for method, url in conversation_urls(foreign, message.pk):
        for headers in ({}, HTMX):
            response = getattr(alice_client, method)(
                url, {"title": "Mine now"} if method == "post" else {}, headers=headers
            )
            assert response.status_code == 404, (method, url, headers)
    foreign.refresh_from_db()
    assert foreign.title == "Mallory's secrets"


def test_a_message_of_another_conversation_is_404(
    alice_client: Client, conversation: Conversation, foreign: Conversation
) -> None:
    message = make_message(conversation=foreign)
    response = alice_client.get(reverse("chat:message", args=[conversation.pk, message.pk]))
    assert response.status_code == 404


def test_index_lists_conversations_newest_first_and_not_others(
    alice_client: Client, user: Any, foreign: Conversation
) -> None:
    older = make_conversation(owner=user, title="Older")
    newer = make_conversation(owner=user, title="Newer")
    Conversation.objects.filter(pk=older.pk).update(updated_at="2020-01-01T00:00:00Z")
    body = alice_client.get("/").content.decode()
    assert body.index("Newer") < body.index("Older")
    assert "Mallory" not in body
    assert f'id="conversation-{newer.pk}"' in body


def test_index_invites_to_start_when_there_is_nothing_yet(alice_client: Client) -> None:
    body = alice_client.get("/").content.decode()
    assert "what shall we talk about?" in body
    assert "No conversations yet." in body


@pytest.mark.needs_memory
def test_header_says_plainly_when_the_demo_model_answers(alice_client: Client, conversation: Conversation) -> None:
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "Offline demo model" in body
    assert 'href="/settings/memory/"' in body


def test_header_shows_the_configured_model(alice_client: Client, conversation: Conversation, fake_model: Any) -> None:
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "Scripted test model" in body
    assert "Offline demo model" not in body


def test_new_conversation_creates_and_redirects(alice_client: Client, user: Any) -> None:
    response = alice_client.post(reverse("chat:conversation_new"), {"message": "Hello"})
    conversation = Conversation.objects.get(owner=user)
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:conversation", args=[conversation.pk])
    assert not conversation.temporary


def test_new_conversation_without_a_first_message_creates_nothing(alice_client: Client, user: Any) -> None:
    response = alice_client.post(reverse("chat:conversation_new"), {"temporary": "on"})
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:index") + "?temporary=1"
    assert not Conversation.objects.filter(owner=user).exists()
    body = alice_client.get(response["Location"]).content.decode()
    assert 'id="start-temporary" checked' in body


def test_the_sidebar_new_conversation_is_a_link_to_the_start_page(alice_client: Client) -> None:
    body = alice_client.get("/").content.decode()
    assert '<a href="/" class="btn btn-primary btn-block new-conversation">' in body


def test_suggestions_send_themselves_with_the_start_form(alice_client: Client) -> None:
    body = alice_client.get("/").content.decode()
    assert 'form="start-form" name="message" value="Suggest a weekend trip for someone who hates crowds."' in body


def test_temporary_chats_leave_the_sidebar_once_left(alice_client: Client, user: Any) -> None:
    alice_client.post(reverse("chat:conversation_new"), {"temporary": "on", "message": "Secret plans"})
    temporary = Conversation.objects.get(owner=user)
    temporary.title = "Secret plans"
    temporary.save()
    assert "Secret plans" in alice_client.get(reverse("chat:conversation", args=[temporary.pk])).content.decode()
    assert "Secret plans" not in alice_client.get("/").content.decode()


@pytest.mark.needs_memory
def test_memory_off_shows_in_the_header_and_on_the_start_page(alice_client: Client, user: Any) -> None:
    assert "Memory off" not in alice_client.get("/").content.decode()
    user.memory_enabled = False
    user.save()
    body = alice_client.get("/").content.decode()
    assert ">Memory off</a>" in body
    assert "Memory is off: Memora doesn’t learn from your chats" in body


def test_the_conversation_page_says_what_it_needs_without_javascript(
    alice_client: Client, conversation: Conversation
) -> None:
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert '<noscript><p class="noscript">Sending messages and watching replies arrive needs JavaScript' in body


@pytest.mark.needs_memory
def test_the_delete_confirmation_says_what_happens_to_memories(
    alice_client: Client, conversation: Conversation
) -> None:
    body = alice_client.get(reverse("chat:conversation_delete", args=[conversation.pk])).content.decode()
    assert "Memories learned from it are kept" in body
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "Memories learned from it are kept" in page  # the JavaScript confirmation too


def test_an_oversized_first_message_is_refused_with_its_text_kept(alice_client: Client, user: Any) -> None:
    text = "x" * 8001
    response = alice_client.post(reverse("chat:conversation_new"), {"message": text})
    body = response.content.decode()
    assert response.status_code == 400
    assert "Message is too long: 8,001 characters; the limit is 8,000." in body
    assert text in body  # nothing the user typed is lost
    assert not Conversation.objects.filter(owner=user).exists()


def test_message_boxes_do_not_silently_truncate_long_text(alice_client: Client, conversation: Conversation) -> None:
    # The server says what is wrong with an oversized message; a maxlength would cut a paste short unseen.
    for url in (reverse("chat:index"), reverse("chat:conversation", args=[conversation.pk])):
        assert 'maxlength="8000"' not in alice_client.get(url).content.decode()


def test_a_temporary_conversation_says_so_in_its_header(alice_client: Client, user: Any) -> None:
    response = alice_client.post(reverse("chat:conversation_new"), {"temporary": "on", "message": "Hi"}, follow=True)
    conversation = Conversation.objects.get(owner=user)
    assert conversation.temporary
    assert "Temporary chat" in response.content.decode()


def test_the_first_message_is_handed_to_the_page_once(alice_client: Client, user: Any) -> None:
    response = alice_client.post(reverse("chat:conversation_new"), {"message": "Hello <there>"}, follow=True)
    body = response.content.decode()
    assert "data-autosend" in body
    assert "Hello &lt;there&gt;</textarea>" in body
    conversation = Conversation.objects.get(owner=user)
    assert DRAFT_SESSION_KEY.format(conversation.pk) not in alice_client.session
    assert (
        "data-autosend" not in alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    )


def test_conversation_page_shows_messages_with_ids_user_text_escaped_and_reply_rendered(
    alice_client: Client, conversation: Conversation
) -> None:
    said = make_message(conversation=conversation, content="<script>alert(1)</script>\nsecond line")
    reply = make_message(
        conversation=conversation, role=Message.Role.ASSISTANT, content="**Sure** <img src=x onerror=alert(1)>"
    )
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert f'id="message-{said.pk}"' in body
    assert f'id="message-{reply.pk}"' in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>second line" in body
    assert "<strong>Sure</strong>" in body
    assert "<script>alert" not in body
    assert "<img src=x" not in body
    assert "onerror=alert" not in body.replace("&lt;img src=x onerror=alert", "")


def test_only_the_failed_latest_reply_offers_retry_in_place(alice_client: Client, conversation: Conversation) -> None:
    make_message(conversation=conversation, content="What time is it?")
    earlier = make_message(conversation=conversation, role="assistant", status="error", error="Timed out.")
    make_message(conversation=conversation, content="And now?")
    latest = make_message(conversation=conversation, role="assistant", status="error", error="Timed out again.")
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "Timed out." in body and "Timed out again." in body
    assert body.count('name="action" value="retry"') == 1
    assert f'name="message_id" value="{latest.pk}"' in body
    assert f'name="message_id" value="{earlier.pk}"' not in body
    assert 'name="content" value=' not in body  # Retry does not send the message again
    # The reply re-fetched on its own (a page loaded mid-reply) offers it too, being the latest.
    partial = alice_client.get(reverse("chat:message", args=[conversation.pk, latest.pk]), headers=HTMX).content
    assert f'name="message_id" value="{latest.pk}"' in partial.decode()


def test_a_reply_still_streaming_at_load_time_refreshes_itself(
    alice_client: Client, conversation: Conversation
) -> None:
    reply = make_message(conversation=conversation, role="assistant", status="streaming", content="")
    url = reverse("chat:message", args=[conversation.pk, reply.pk])
    assert f'hx-get="{url}"' in alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    Message.objects.filter(pk=reply.pk).update(status="interrupted", content="Half")
    partial = alice_client.get(url, headers=HTMX).content.decode()
    assert partial.strip().startswith(f'<article id="message-{reply.pk}"')
    assert "Half" in partial
    assert "hx-get" not in partial


def test_conversation_page_query_count_does_not_grow(
    alice_client: Client, user: Any, conversation: Conversation, django_assert_max_num_queries: Any
) -> None:
    url = reverse("chat:conversation", args=[conversation.pk])
    make_message(conversation=conversation, role="assistant")  # replies are annotated (what they used) in one query
    # (13: the pinned conversations and the projects are queries of their own, on top of the list, and the
    # replies' memory tokens are read in one query for "memory: N tokens")
    with django_assert_max_num_queries(13) as few:
        alice_client.get(url)
    for i in range(15):
        make_conversation(owner=user)
        make_message(conversation=conversation, content=f"q{i}")
        make_message(conversation=conversation, role="assistant", status="error" if i % 3 else "complete")
    with django_assert_max_num_queries(len(few.captured_queries)):
        alice_client.get(url)


def test_index_query_count_does_not_grow(alice_client: Client, user: Any, django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(8) as few:
        alice_client.get("/")
    for _ in range(15):
        make_conversation(owner=user, temporary=True)
    with django_assert_max_num_queries(len(few.captured_queries)):
        alice_client.get("/")


def test_rename_with_htmx_returns_the_title_and_updates_the_sidebar(
    alice_client: Client, conversation: Conversation
) -> None:
    url = reverse("chat:conversation_rename", args=[conversation.pk])
    form = alice_client.get(url, headers=HTMX).content.decode()
    assert form.strip().startswith('<form id="conversation-title"')
    response = alice_client.post(url, {"title": "Small phones"}, headers=HTMX)
    body = response.content.decode()
    assert '<h1 class="title" tabindex="-1">Small phones</h1>' in body
    assert f'<li id="conversation-{conversation.pk}" hx-swap-oob="true"' in body
    conversation.refresh_from_db()
    assert conversation.title == "Small phones"


def test_rename_without_javascript_redirects_back(alice_client: Client, conversation: Conversation) -> None:
    url = reverse("chat:conversation_rename", args=[conversation.pk])
    assert alice_client.get(url).status_code == 200
    response = alice_client.post(url, {"title": "Plain"})
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.title == "Plain"


def test_rename_to_blank_is_refused_inline_with_a_message(alice_client: Client, conversation: Conversation) -> None:
    response = alice_client.post(
        reverse("chat:conversation_rename", args=[conversation.pk]), {"title": "  "}, headers=HTMX
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert body.startswith('<form id="conversation-title"')  # the form in place of the title, not a page
    assert "A title cannot be empty." in body
    assert 'aria-describedby="rename-errors"' in body and 'id="rename-errors"' in body
    conversation.refresh_from_db()
    assert conversation.title == "Phones"


def test_delete_asks_for_confirmation_then_deletes(alice_client: Client, conversation: Conversation) -> None:
    url = reverse("chat:conversation_delete", args=[conversation.pk])
    assert "cannot be undone" in alice_client.get(url).content.decode()
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    response = alice_client.post(url)
    assert response.status_code == 302
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_delete_with_htmx_redirects_the_page(alice_client: Client, conversation: Conversation) -> None:
    response = alice_client.post(reverse("chat:conversation_delete", args=[conversation.pk]), headers=HTMX)
    assert response["HX-Redirect"] == "/"
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_delete_page_carries_htmx_confirmation(alice_client: Client, conversation: Conversation) -> None:
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "hx-confirm=" in body


def test_logout_is_a_post_form_and_password_change_is_linked(alice_client: Client) -> None:
    body = alice_client.get("/").content.decode()
    assert f'<form method="post" action="{reverse("logout")}">' in body
    assert reverse("password_change") in body


@pytest.mark.needs_memory
def test_memory_settings_page_exists(alice_client: Client) -> None:
    assert alice_client.get("/settings/memory/").status_code == 200


def test_htmx_and_its_ws_extension_come_from_django_htmx(alice_client: Client, conversation: Conversation) -> None:
    body = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "/static/django_htmx/htmx-2.min.js" in body
    assert "/static/django_htmx/ext/hx-ws-2.min.js" in body
    assert f'ws-connect="/ws/c/{conversation.pk}/"' in body
    assert "https://" not in body.split("<body", 1)[0]  # no CDN in the head


def test_other_users_do_not_see_the_conversation_in_their_list(client: Client, conversation: Conversation) -> None:
    client.force_login(cast(User, UserFactory(username="bob")))
    assert "Phones" not in client.get("/").content.decode()
