"""Chat's extension points that other apps plug into: tool activity labels, notices, demo model hooks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.test import Client

from chat import extensions, push
from chat.fragments import activity_html
from tests.chat.fake_tools import EchoTool


def test_a_tool_names_what_the_reply_shows_while_it_runs(register_tool: Callable[[Any], Any]) -> None:
    tool = register_tool(EchoTool(name="lookup"))
    tool.activity_label = "Looking it up…"
    html = activity_html(7, "lookup")
    assert 'id="message-7-activity"' in html and "Looking it up…" in html


def test_a_tool_without_a_label_shows_a_generic_activity(register_tool: Callable[[Any], Any]) -> None:
    register_tool(EchoTool(name="lookup"))
    assert "Working…" in activity_html(7, "lookup")
    assert "Working…" in activity_html(7, "not-registered")


def test_an_activity_label_is_escaped(register_tool: Callable[[Any], Any]) -> None:
    tool = register_tool(EchoTool(name="lookup"))
    tool.activity_label = "<b>bold</b>"
    assert "&lt;b&gt;bold&lt;/b&gt;" in activity_html(7, "lookup")


async def test_notify_user_sends_a_chat_notice_to_the_users_group_only() -> None:
    layer = get_channel_layer()
    mine, theirs = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(extensions.user_group(61), mine)
    await layer.group_add(extensions.user_group(62), theirs)
    assert await sync_to_async(extensions.notify_user)(61, "<p>Hello</p>")
    assert await layer.receive(mine) == {"type": "chat.notice", "html": "<p>Hello</p>"}
    with pytest.raises(TimeoutError):  # nothing arrived for the other user
        await asyncio.wait_for(layer.receive(theirs), 0.2)
    await layer.group_discard(extensions.user_group(61), mine)
    await layer.group_discard(extensions.user_group(62), theirs)


def test_notify_user_without_a_channel_layer_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(push, "get_channel_layer", lambda: None)
    assert extensions.notify_user(1, "<p>Hello</p>") is False


def test_demo_hooks_register_once_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extensions, "_demo_hooks", {})

    def trigger(text: str, tools: set[str]) -> str | None:
        return None

    def responder(messages: list[dict[str, Any]]) -> str | None:
        return None

    for _ in range(2):
        extensions.register_demo("test", tool_trigger=trigger, json_responder=responder)
    assert extensions.demo_tool_triggers() == [trigger]
    assert extensions.demo_json_responders() == [responder]


@pytest.fixture
def alice_client(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_page_blocks_render_in_their_slot_in_order(monkeypatch: pytest.MonkeyPatch, alice_client: Client) -> None:
    monkeypatch.setattr(extensions, "_page_blocks", {})
    extensions.register_page_block("header", "first", lambda context: f"<i>first {context['user'].pk}</i>")
    extensions.register_page_block("header", "second", lambda context: "<i>second</i>")
    body = alice_client.get("/").content.decode()
    header = body[body.index('<header class="chat-header">') : body.index("</header>")]
    assert header.index("<i>first ") < header.index("<i>second</i>")


@pytest.mark.django_db
def test_without_blocks_the_pages_show_chats_own_text(monkeypatch: pytest.MonkeyPatch, alice_client: Client) -> None:
    monkeypatch.setattr(extensions, "_page_blocks", {})
    body = alice_client.get("/").content.decode()
    assert '<p class="start-lead">Ask anything.</p>' in body and "/settings/memory/" not in body


def test_an_unknown_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="No chat page slot"):
        extensions.register_page_block("footer", "x", "x.html")
