"""The "Memory updated" notice: pushed to the user's chat pages, and polled where pushes can't cross processes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.test import Client
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from accounts.models import User
from chat import extensions, markers, push
from memory import chat_fragments, notices
from memory.changes import MemoryChange
from memory.models import ExtractionRun, Memory
from memory.signals import memories_changed
from tests.helpers import make_conversation, make_memory, run, say

CHANGES = [MemoryChange("add", memory_id=5, content="Prefers small phones, finds them easier to use one-handed")]


async def receive_or_none(layer: Any, channel: str, seconds: float = 0.2) -> dict[str, Any] | None:
    try:
        return await asyncio.wait_for(layer.receive(channel), seconds)
    except TimeoutError:
        return None


# --- push -----------------------------------------------------------------------------------------


async def test_receiver_sends_the_notice_to_the_users_group_only() -> None:
    layer = get_channel_layer()
    mine, theirs = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("user-41", mine)
    await layer.group_add("user-42", theirs)
    # Sent from a worker thread, as the pipeline's on-commit callback is.
    await sync_to_async(memories_changed.send)(sender=Memory, user_id=41, run_id=7, changes=CHANGES)
    message = await receive_or_none(layer, mine, seconds=5)
    assert message is not None and message["type"] == "chat.notice"
    html = message["html"]
    assert (
        "Memory updated:" in html and "remembered “Prefers small phones, finds them easier to use one-handed”" in html
    )
    assert 'href="/settings/memory/">Review</a>' in html and 'data-memory-run="7"' in html
    # Rendered in each language too: a page shows the one it speaks (chat.consumers).
    assert message["translations"]["en"] == html
    assert "记忆已更新：" in message["translations"]["zh-hans"] and "记住了“Prefers small phones" in (
        message["translations"]["zh-hans"].replace("</strong>", "")
    )
    assert await receive_or_none(layer, theirs) is None
    await layer.group_discard("user-41", mine)
    await layer.group_discard("user-42", theirs)


@pytest.mark.django_db
def test_a_flush_run_that_changes_memories_pushes_a_notice(
    user: User, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Layer:
        async def group_send(self, group: str, event: dict[str, Any]) -> None:
            if event["type"] == "chat.notice":  # the conversation's marker goes the same way (chat.push)
                sent.append((group, event))

    monkeypatch.setattr(push, "get_channel_layer", Layer)
    message = say(make_conversation(owner=user), "Remember that I prefer small phones.")
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)
    assert Memory.objects.filter(owner=user, invalid_at__isnull=True).exists()
    assert [group for group, _ in sent] == [f"user-{user.pk}"]
    assert "Memory updated: remembered" in " ".join(sent[0][1]["html"].split()).replace("</strong>", "")


@pytest.mark.django_db
def test_a_run_that_changes_nothing_pushes_nothing(user: User, django_capture_on_commit_callbacks: Any) -> None:
    calls: list[dict[str, Any]] = []
    memories_changed.connect(lambda sender, **kw: calls.append(kw), dispatch_uid="test-nothing", weak=False)
    try:
        message = say(make_conversation(owner=user), "What's the weather like in Paris?")
        with django_capture_on_commit_callbacks(execute=True):
            run(user, up_to=message)
    finally:
        memories_changed.disconnect(dispatch_uid="test-nothing")
    assert calls == []


def test_a_push_failure_is_logged_not_raised(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    class Broken:
        async def group_send(self, group: str, event: dict[str, Any]) -> None:
            raise ConnectionError("redis is down")

    monkeypatch.setattr(push, "get_channel_layer", Broken)
    notices.on_memories_changed(None, user_id=1, run_id=3, changes=CHANGES)
    assert "could not push the memory notice of run 3" in caplog.text


def test_notice_text_names_what_changed() -> None:
    assert notices.describe([MemoryChange("clear")]) == "forgot everything."
    text = notices.describe(
        [
            MemoryChange("update", memory_id=3, content="Prefers big screens", previous_id=2),
            MemoryChange("retract", memory_id=1, content="Lives in Lyon"),
            MemoryChange("add", memory_id=4, content="x" * 90),
        ]
    )
    assert text.startswith("updated “Prefers big screens”, forgot “Lives in Lyon” and 1 more change")
    assert notices.describe([MemoryChange("add", content="y" * 90)]).endswith("…”.")


# --- poll -----------------------------------------------------------------------------------------


def make_run(owner: User, *, ops: list[dict[str, Any]], status: str = ExtractionRun.Status.APPLIED) -> ExtractionRun:
    return ExtractionRun.objects.create(owner=owner, trigger="background", status=status, applied_ops=ops)


@pytest.mark.django_db
def test_poll_returns_only_the_users_runs_that_changed_memories(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    forgotten = make_memory(owner=user, content="Lives in Lyon")
    before = make_run(user, ops=[{"op": "add", "content": "An old change"}])
    changed = make_run(user, ops=[{"op": "add", "content": "Prefers tea"}, {"op": "retract", "id": forgotten.pk}])
    make_run(user, ops=[])  # judged, nothing changed
    make_run(user, ops=[{"op": "add", "content": "Never applied"}], status=ExtractionRun.Status.FAILED)
    make_run(other_user, ops=[{"op": "add", "content": "Mallory's secret"}])

    response = client.get(reverse("memory:notices"), {"after": before.pk}, headers={"HX-Request": "true"})
    text = response.content.decode()
    assert response.status_code == 200
    assert "remembered “Prefers tea”, forgot “Lives in Lyon”" in text
    assert text.count("data-memory-run=") == 1 and f'data-memory-run="{changed.pk}"' in text
    assert "An old change" not in text and "Never applied" not in text and "Mallory" not in text
    assert 'hx-swap-oob="beforeend:#notices"' in text
    assert f"after={changed.pk}" in text  # the next poll starts after it: never the same run twice

    again = client.get(reverse("memory:notices"), {"after": changed.pk}).content.decode()
    assert "data-memory-run=" not in again and f"after={changed.pk}" in again


@pytest.mark.django_db
def test_poll_for_another_user_shows_nothing_of_theirs(client: Client, user: User, other_user: User) -> None:
    make_run(other_user, ops=[{"op": "add", "content": "Mallory's secret"}])
    client.force_login(user)
    text = client.get(reverse("memory:notices"), {"after": 0}).content.decode()
    assert "data-memory-run=" not in text and "Mallory" not in text


@pytest.mark.django_db
def test_poll_without_a_position_starts_from_now(client: Client, user: User) -> None:
    old = make_run(user, ops=[{"op": "add", "content": "Prefers tea"}])
    client.force_login(user)
    text = client.get(reverse("memory:notices")).content.decode()
    assert "data-memory-run=" not in text and f"after={old.pk}" in text


def test_poll_stops_when_logged_out(client: Client) -> None:
    assert client.get(reverse("memory:notices"), headers={"HX-Request": "true"}).status_code == 286
    assert client.get(reverse("memory:notices")).status_code == 302


def render_poller(user: Any) -> str:
    """The poller as the chat page gets it (memory's conversation page fragment)."""
    return chat_fragments.notice_poller_html(user=user)


@pytest.mark.django_db
def test_chat_page_poller_always_polls_on_the_in_memory_layer_and_on_redis_only_while_the_socket_is_not_live(
    user: User, settings: Any
) -> None:
    last = make_run(user, ops=[{"op": "add", "content": "Prefers tea"}])
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    html = render_poller(user)
    assert 'id="memory-notice-poller"' in html and 'hx-trigger="every 2s"' in html
    assert f"after={last.pk}" in html and "js/memory.js" in html
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {}}}
    html = render_poller(user)
    assert 'id="memory-notice-poller"' in html  # the fallback while the channel layer is away
    assert "data-offline-only" in html  # static/js/chat.js skips its polls while the socket is live


def test_poller_is_not_rendered_for_anonymous_users() -> None:
    from django.contrib.auth.models import AnonymousUser

    assert render_poller(AnonymousUser()).strip() == ""


def test_group_name_matches_the_chat_consumer() -> None:
    from chat.consumers import user_group

    assert extensions.user_group(5) == user_group(5) == "user-5"


@pytest.mark.django_db
def test_conversation_page_carries_the_poller_on_the_in_memory_channel_layer(
    client: Client, user: User, settings: Any
) -> None:
    from chat.services import conversation_create

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    conversation = conversation_create(user=user)
    client.force_login(user)
    body = client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert body.count('id="memory-notice-poller"') == 1


# --- the lasting marker and the deep link ----------------------------------------------------------


@pytest.mark.django_db
def test_a_run_that_changes_memories_marks_its_conversation_and_links_to_the_memory(
    client: Client, user: User, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = make_conversation(owner=user)
    message = say(conversation, "Remember that I prefer small phones.")
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)
    memory = Memory.objects.get(owner=user, invalid_at__isnull=True)
    marker = conversation.markers.get()
    assert marker.kind == "memory"
    assert marker.text.startswith("Memory updated · ") and memory.content[:20] in marker.text
    assert marker.link == f"/settings/memory/#memory-{memory.pk}" and marker.link_text == "Review"
    client.force_login(user)
    page = client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert f'id="marker-{marker.pk}" class="conversation-marker marker-memory"' in page
    assert page.index(message.content) < page.index(f'id="marker-{marker.pk}"')  # where it changed
    assert f'<a href="/settings/memory/#memory-{memory.pk}">Review</a>' in page


@pytest.mark.django_db
def test_a_run_that_changes_nothing_leaves_no_marker(user: User, django_capture_on_commit_callbacks: Any) -> None:
    conversation = make_conversation(owner=user)
    message = say(conversation, "What's the weather like in Paris?")
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)
    assert not conversation.markers.exists()


@pytest.mark.django_db
def test_polled_notices_link_to_the_changed_memory(client: Client, user: User) -> None:
    client.force_login(user)
    message = say(make_conversation(owner=user), "Remember that I prefer small phones.")
    run(user, up_to=message)
    memory = Memory.objects.get(owner=user, invalid_at__isnull=True)
    body = client.get(reverse("memory:notices"), {"after": 0}, headers={"HX-Request": "true"}).content.decode()
    assert f'<a href="/settings/memory/#memory-{memory.pk}">Review</a>' in body


def test_review_link_falls_back_to_forgotten_memory_then_history() -> None:
    assert notices.review_link(new_memory_id=None, applied_ops=[{"op": "retract", "id": 9}]) == (
        "/settings/memory/#memory-9"
    )
    assert notices.review_link(new_memory_id=None, applied_ops=[{"op": "clear"}]) == "/settings/memory/#memory-history"


def test_marker_text_names_up_to_two_changes() -> None:
    assert notices.marker_text(CHANGES) == "Memory updated · Prefers small phones, finds them easier to use one-handed"
    three = [
        MemoryChange("add", content="Is vegetarian"),
        MemoryChange("retract", memory_id=8, content="Lives in Paris"),
        MemoryChange("add", content="Likes tea"),
    ]
    assert notices.marker_text(three) == "Memory updated · Is vegetarian · Forgot “Lives in Paris” (and 1 more)"


@pytest.mark.django_db
def test_a_memory_marker_is_worded_in_the_readers_language_not_the_one_it_was_written_in(
    client: Client, user: User, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = make_conversation(owner=user)
    message = say(conversation, "Remember that I prefer small phones.")
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)
    marker = conversation.markers.get()
    assert marker.text.startswith("Memory updated · ")  # written for the default language
    assert marker.data["changes"][0]["kind"] == "add" and marker.data["more"] == 0
    client.force_login(user)
    url = reverse("chat:conversation", args=[conversation.pk])
    page = client.get(url, headers={"Accept-Language": "zh-CN"}).content.decode()
    assert "记忆已更新 · " in page and ">查看</a>" in page and "Memory updated" not in page
    assert "Memory updated · " in client.get(url, headers={"Accept-Language": "en"}).content.decode()


@pytest.mark.django_db
def test_a_marker_without_data_shows_the_text_it_was_stored_with(client: Client, user: User) -> None:
    conversation = make_conversation(owner=user)
    marker = markers.marker_add(
        conversation=conversation, kind="memory", text="Memory updated · Likes tea", link="/x/", link_text="Review"
    )
    assert marker.data == {}
    client.force_login(user)
    page = client.get(reverse("chat:conversation", args=[conversation.pk]), headers={"Accept-Language": "zh-CN"})
    assert "Memory updated · Likes tea" in page.content.decode()


def test_marker_wording_follows_the_active_language_for_changes_deletions_and_outcomes() -> None:
    three = [
        MemoryChange("add", content="Is vegetarian"),
        MemoryChange("retract", memory_id=8, content="Lives in Paris"),
        MemoryChange("add", content="Likes tea"),
    ]
    data = notices.marker_data(three, deleted={8})
    assert "Lives in Paris" not in str(data)
    assert notices.marker_wording(data) == (
        "Memory updated · Is vegetarian · Forgot “(deleted)” (and 1 more)",
        "Review",
    )
    with translation.override("zh-hans"):
        text, link_text = notices.marker_wording(data)
        assert text.startswith("记忆已更新 · Is vegetarian · 已忘记") and link_text == "查看"
        assert notices.marker_wording({"outcome": "applied"})[0] == gettext(
            "Memory checked: nothing from this message was remembered."
        )
        assert "Memory" not in notices.marker_wording({"outcome": "applied"})[0]


@pytest.mark.django_db
def test_keeping_a_suggestion_turns_its_marker_into_a_change(client: Client, user: User) -> None:
    conversation = make_conversation(owner=user)
    memory = make_memory(owner=user, content="Is diabetic", suggested=True)
    change = MemoryChange("add", memory_id=memory.pk, content="Is diabetic", suggested=True)
    marker = markers.marker_add(
        conversation=conversation, kind="memory", text=notices.marker_text([change]), data=notices.marker_data([change])
    )
    client.force_login(user)
    assert client.post(reverse("memory:keep", args=[memory.pk]), headers={"HX-Request": "true"}).status_code == 200
    marker.refresh_from_db()
    assert marker.text == "Memory updated · Is diabetic" and marker.link_text == "Review"
    assert marker.data["changes"] == [{"kind": "add", "content": "Is diabetic"}]
