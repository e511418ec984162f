"""The chat people expect, in Chromium: the model picker (keyboard only), axe on every state."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up
from tests.fake_openai import FakeOpenAIServer, FakeResponse

pytestmark = pytest.mark.browser


def last_chat_model(provider: FakeOpenAIServer) -> str:
    """The model of the provider's latest streamed (chat) request; judge calls do not stream."""
    return str([r for r in provider.requests if r.get("stream")][-1]["model"])


def test_the_model_picker_switches_the_next_reply_by_keyboard(
    page: Any, live_server_url: str, provider: FakeOpenAIServer
) -> None:
    # Without CHAT_MODELS the choice is the provider's list (its "fake-model") beside CHAT_MODEL ("local-model").
    sign_up(page, live_server_url, "picker")
    start_choice = page.locator("#model-select")
    expect(start_choice).to_have_value("local-model")
    expect(start_choice.locator("option")).to_have_count(2)
    page.fill("#start-input", "Hello on the default model")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    assert last_chat_model(provider) == "local-model"
    audit(page, "conversation with the model picker")

    # Keyboard only: Tab to the picker, choose the other model; the page says so, focus stays.
    choice = page.locator("#model-select")
    choice.focus()
    page.keyboard.press("ArrowDown")
    expect(choice).to_have_value("fake-model")
    expect(page.locator("#model-status")).to_have_text(re.compile("fake-model"))
    expect(choice).to_be_focused()
    page.fill("#composer-input", "Hello on the other model")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(2)
    assert last_chat_model(provider) == "fake-model"

    # Reloaded, the conversation still names its model.
    page.reload()
    expect(page.locator("#model-select")).to_have_value("fake-model")


def test_regenerate_and_step_through_the_versions_by_keyboard(
    page: Any, live_server_url: str, provider: FakeOpenAIServer
) -> None:
    sign_up(page, live_server_url, "regenerator")
    provider.queue(FakeResponse("The first take."))
    page.fill("#start-input", "Tell me something")
    page.keyboard.press("Enter")
    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("The first take.")

    provider.queue(FakeResponse("The second take."))
    reply.get_by_role("button", name="Regenerate").focus()
    page.keyboard.press("Enter")
    expect(reply).to_contain_text("The second take.")
    expect(page.locator(".message-assistant")).to_have_count(1)
    expect(reply.locator(".version-count")).to_have_text("2/2")
    audit(page, "a regenerated reply with its versions")

    # ‹ shows the first version again, focus stays on the button; › comes back.
    page.locator(".version-btn").first.focus()
    page.keyboard.press("Enter")
    expect(reply.locator(".version-count")).to_have_text("1/2")
    expect(reply).to_contain_text("The first take.")
    page.locator(".version-btn").last.focus()
    page.keyboard.press("Enter")
    expect(reply.locator(".version-count")).to_have_text("2/2")
    expect(page.locator(".version-btn").last).to_be_disabled()

    # The next turn continues from the version shown.
    page.locator(".version-btn").first.click()
    expect(reply.locator(".version-count")).to_have_text("1/2")
    page.fill("#composer-input", "And then?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(2)
    sent = json.dumps([r for r in provider.requests if r.get("stream")][-1]["messages"])
    assert "The first take." in sent and "The second take." not in sent


def test_edit_the_last_message_by_keyboard_runs_the_turn_again(
    page: Any, live_server_url: str, provider: FakeOpenAIServer
) -> None:
    sign_up(page, live_server_url, "editor")
    page.fill("#start-input", "First question")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    page.fill("#composer-input", "My dog is called Rexbottom")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(2)
    # Only the last message sent offers Edit.
    expect(page.locator(".message-user .edit-message summary:visible")).to_have_count(1)

    provider.queue(FakeResponse("Rover is a good name."))
    edit = page.locator(".message-user").last.locator(".edit-message")
    edit.locator("summary").focus()
    page.keyboard.press("Enter")
    box = edit.locator("textarea")
    expect(box).to_be_visible()
    audit(page, "editing the last message")
    box.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("My dog is called Rover")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").last).to_contain_text("Rover is a good name.")
    expect(page.locator(".message-user")).to_have_count(2)
    expect(page.locator("#messages")).not_to_contain_text("Rexbottom")
    page.reload()
    expect(page.locator("#messages")).not_to_contain_text("Rexbottom")
    expect(page.locator(".message-user").last).to_contain_text("My dog is called Rover")


def test_save_a_conversation_as_markdown_from_its_menu(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "saver")
    page.fill("#start-input", "Remember the trip to Lisbon")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    page.locator(".title-row summary").focus()
    page.keyboard.press("Enter")
    audit(page, "the conversation's menu")
    with page.expect_download() as info:
        page.get_by_role("link", name="Save as Markdown").focus()
        page.keyboard.press("Enter")
    download = info.value
    assert download.suggested_filename.endswith(".md")
    text = Path(download.path()).read_text(encoding="utf-8")
    assert "Remember the trip to Lisbon" in text and "## Memora · " in text


def test_pin_a_conversation_on_top_of_the_dated_list_by_keyboard(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "pinner")
    for text in ("First chat about tea", "Second chat about coffee"):
        page.goto(f"{live_server_url}/")
        page.fill("#start-input", text)
        page.keyboard.press("Enter")
        expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    sidebar = page.locator("#sidebar")
    expect(sidebar.get_by_role("heading", name="Today")).to_be_visible()
    page.locator(".title-row summary").focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Pin to the top").focus()
    page.keyboard.press("Enter")
    pinned = sidebar.get_by_role("heading", name="Pinned")
    expect(pinned).to_be_visible()
    expect(sidebar.locator("ul[aria-labelledby=group-pinned] li")).to_have_count(1)
    expect(sidebar.locator("ul[aria-labelledby=group-pinned]")).to_contain_text("Second chat about coffee")
    audit(page, "the list with a pinned conversation and date groups")
