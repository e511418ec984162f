"""The conversation list's filter box, its rename in place and how every open page follows a change."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from chat import push, sidebar
from chat.models import Conversation, Project
from chat.push import user_group
from chat.services import conversation_create, conversation_delete, conversation_update

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


def filtered(client: Client, title: str, **extra: str) -> str:
    return client.get(reverse("chat:conversation_nav"), {"title": title, **extra}, headers=HTMX).content.decode()


def test_the_filter_lists_only_titles_holding_the_text_in_any_case_and_counts_them(client: Client, user: User) -> None:
    client.force_login(user)
    for title in ("Trip to Lisbon", "lisbon food", "Python decorators"):
        conversation_create(user=user, title=title)
    body = filtered(client, "LISBON")
    assert ">Trip to Lisbon<" in body and ">lisbon food<" in body and "Python decorators" not in body
    assert "2 conversation titles hold “LISBON”." in body  # the status the page announces


def test_the_filter_reaches_pinned_and_project_conversations_and_hides_projects_without_a_match(
    client: Client, user: User
) -> None:
    client.force_login(user)
    work = Project.objects.create(owner=user, name="Work")
    Project.objects.create(owner=user, name="Garden")
    conversation_create(user=user, title="Budget draft", project=work)
    pinned = conversation_create(user=user, title="Budget ideas")
    conversation_update(conversation=pinned, pinned=True)
    body = filtered(client, "budget")
    assert body.index(">Budget ideas<") < body.index(">Work<") < body.index(">Budget draft<")
    assert ">Garden<" not in body
    assert "2 conversation titles hold “budget”." in body


def test_a_filter_matching_nothing_says_so(client: Client, user: User) -> None:
    client.force_login(user)
    conversation_create(user=user, title="Trip to Lisbon")
    body = filtered(client, "Oslo")
    assert "No conversation title holds “Oslo”." in body and "0 conversation titles hold" in body


def test_an_emptied_filter_lists_everything_again_and_says_so(client: Client, user: User) -> None:
    client.force_login(user)
    conversation_create(user=user, title="Trip to Lisbon")
    body = filtered(client, "")
    assert ">Trip to Lisbon<" in body and "Filter cleared: every conversation is listed." in body


def test_the_filter_never_lists_another_users_conversations(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    theirs = conversation_create(user=other_user, title="Secret plan")
    body = filtered(client, "plan", current=str(theirs.pk))
    assert "Secret plan" not in body


def test_the_filter_without_javascript_opens_the_start_page_with_the_list_filtered(client: Client, user: User) -> None:
    client.force_login(user)
    conversation_create(user=user, title="Trip to Lisbon")
    conversation_create(user=user, title="Python decorators")
    body = client.get(reverse("chat:conversation_nav"), {"title": "lisbon"}).content.decode()
    assert ">Trip to Lisbon<" in body and ">Python decorators<" not in body
    assert 'value="lisbon"' in body


def test_show_more_keeps_the_filter(client: Client, user: User, settings: Any) -> None:
    client.force_login(user)
    now = timezone.now()
    for n in range(55):
        c = conversation_create(user=user, title=f"Note {n}")
        Conversation.objects.filter(pk=c.pk).update(updated_at=now - timedelta(minutes=n))
    conversation_create(user=user, title="Unrelated")
    body = filtered(client, "note")
    assert "title=note" in body  # the "Show more" link carries the filter
    assert "Unrelated" not in body


def test_a_pinned_conversation_in_a_project_is_listed_once(client: Client, user: User) -> None:
    client.force_login(user)
    work = Project.objects.create(owner=user, name="Work")
    pinned = conversation_create(user=user, title="Roadmap", project=work)
    conversation_update(conversation=pinned, pinned=True)
    page = client.get("/").content.decode()
    assert page.count(">Roadmap<") == 1


def test_rename_from_the_list_answers_the_item_and_the_title_only_on_its_own_page(client: Client, user: User) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user, title="Old name")
    url = reverse("chat:conversation_rename", args=[conversation.pk]) + "?place=sidebar"
    form = client.get(url, headers=HTMX).content.decode()
    assert form.startswith(f'<li id="conversation-{conversation.pk}" class="conversation-renaming">')
    assert f'id="rename-title-{conversation.pk}"' in form and ">New title<" in form
    elsewhere = {**HTMX, "HX-Current-URL": "http://testserver/"}
    body = client.post(url, {"title": "New name"}, headers=elsewhere).content.decode()
    assert body.strip().startswith(f'<li id="conversation-{conversation.pk}" class="conversation-item">')
    assert ">New name<" in body and 'id="conversation-title"' not in body
    own = {**HTMX, "HX-Current-URL": f"http://testserver/c/{conversation.pk}/"}
    body = client.post(url, {"title": "Newer name"}, headers=own).content.decode()
    assert 'aria-current="page"' in body and 'id="conversation-title" class="title-row" hx-swap-oob="true"' in body
    conversation.refresh_from_db()
    assert conversation.title == "Newer name"


def test_a_blank_title_from_the_list_comes_back_with_its_error(client: Client, user: User) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user, title="Old name")
    url = reverse("chat:conversation_rename", args=[conversation.pk]) + "?place=sidebar"
    response = client.post(url, {"title": "  "}, headers=HTMX)
    assert response.status_code == 422
    assert f'aria-describedby="rename-errors-{conversation.pk}"' in response.content.decode()


def test_cancelling_a_rename_in_the_list_gives_the_item_back(client: Client, user: User) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user, title="Kept name")
    url = reverse("chat:conversation_rename", args=[conversation.pk]) + "?place=sidebar&cancel=1"
    body = client.get(url, headers=HTMX).content.decode()
    assert body.strip().startswith(f'<li id="conversation-{conversation.pk}" class="conversation-item">')
    assert ">Kept name<" in body


def test_pin_from_the_list_answers_the_list_drawn_again(client: Client, user: User) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user, title="Roadmap")
    response = client.post(reverse("chat:conversation_pin", args=[conversation.pk]), {"place": "sidebar"}, headers=HTMX)
    body = response.content.decode()
    assert body.index('id="group-pinned"') < body.index(">Roadmap<")
    assert "HX-Redirect" not in response.headers


def test_another_users_conversation_cannot_be_renamed_from_the_list(
    client: Client, user: User, other_user: User
) -> None:
    client.force_login(user)
    theirs = conversation_create(user=other_user, title="Theirs")
    url = reverse("chat:conversation_rename", args=[theirs.pk]) + "?place=sidebar"
    assert client.get(url, headers=HTMX).status_code == 404
    assert client.post(url, {"title": "Mine"}, headers=HTMX).status_code == 404


def test_the_list_drawn_again_for_a_change_elsewhere_does_not_announce_a_filter(client: Client, user: User) -> None:
    client.force_login(user)
    conversation_create(user=user, title="Trip")
    body = filtered(client, "", refresh="1")
    assert "sidebar-filter-status" not in body


def sent_events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Layer:
        async def group_send(self, group: str, event: dict[str, Any]) -> None:
            sent.append((group, event))

    monkeypatch.setattr(push, "get_channel_layer", Layer)
    return sent


@pytest.mark.parametrize("change", [{"title": "Renamed"}, {"pinned": True}])
def test_a_rename_or_pin_reaches_every_open_page_of_the_user_after_commit(
    user: User, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any, change: dict[str, Any]
) -> None:
    conversation = conversation_create(user=user, title="Before")
    sent = sent_events(monkeypatch)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        conversation_update(conversation=conversation, **change)
    assert sent == []
    for callback in callbacks:
        callback()
    assert sent == [(user_group(user.pk), {"type": "chat.sidebar", "conversation_id": str(conversation.pk)})]


def test_a_page_told_of_a_change_asks_for_its_list_and_on_its_own_conversation_its_title(user: User) -> None:
    conversation = conversation_create(user=user, title="Open one")
    own = sidebar.sync_html(current=conversation, title=True)
    other = sidebar.sync_html(current=conversation, title=False)
    assert f"/c/list/?refresh=1&amp;current={conversation.pk}" in own and 'hx-trigger="load"' in own
    assert f"/c/{conversation.pk}/rename/?cancel=1" in own
    assert "rename" not in other


def test_a_deletion_reaches_every_open_page_of_the_user_after_commit(
    user: User, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = conversation_create(user=user, title="Gone soon")
    pk = str(conversation.pk)
    sent = sent_events(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        conversation_delete(conversation=conversation)
    assert sent == [(user_group(user.pk), {"type": "chat.sidebar", "conversation_id": pk})]


def test_the_filtered_list_costs_the_same_few_queries_however_many_conversations_match(
    client: Client, user: User, django_assert_max_num_queries: Any
) -> None:
    client.force_login(user)
    work = Project.objects.create(owner=user, name="Work")
    for n in range(30):
        conversation_create(user=user, title=f"Plan {n}", project=work if n % 3 == 0 else None)
    current = conversation_create(user=user, title="Plan open")
    with django_assert_max_num_queries(9):
        body = filtered(client, "plan", current=str(current.pk))
    assert "31 conversation titles hold “plan”." in body
