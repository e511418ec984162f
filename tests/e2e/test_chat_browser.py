"""The chat in Chromium: sign up, start a conversation, watch the reply stream, stop one, reload."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


def reply(page: Any, n: int) -> Any:
    return page.locator(".message-assistant").nth(n)


def test_stream_stop_and_reload(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "alice")
    expect(page.get_by_text("what shall we talk about?")).to_be_visible()

    # Start a conversation from the start page; the first message is sent as soon as the page connects.
    page.fill("#start-input", "Write me something long, please")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-user .message-text").first).to_have_text("Write me something long, please")
    streaming = reply(page, 0).locator(".streaming-text")
    expect(streaming).to_contain_text("word3")  # text arrives while the reply is still being written
    expect(reply(page, 0)).to_have_attribute("data-status", "streaming")
    expect(page.locator("#stop-btn")).to_be_visible()
    expect(page.locator("#composer .send-btn")).to_be_disabled()
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(reply(page, 0)).to_contain_text("word199")
    expect(page.locator("#composer .send-btn")).to_be_enabled()
    expect(page.locator(".chat-header .title")).to_have_text("Write me something long, please")

    # A second reply, stopped part-way. Shift+Enter makes a new line; Enter sends.
    page.fill("#composer-input", "Another long one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("please")
    expect(page.locator("#composer-input")).to_have_value("Another long one\nplease")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_have_value("")
    expect(reply(page, 1).locator(".streaming-text")).to_contain_text("word5")
    page.click("#stop-btn")
    expect(reply(page, 1)).to_have_attribute("data-status", "interrupted")
    expect(reply(page, 1)).to_contain_text("Stopped")
    stopped_text = reply(page, 1).locator(".message-text").inner_text()
    assert stopped_text.startswith("word0 word1 word2 word3 word4 word5")
    assert "word199" not in stopped_text

    # A reload shows exactly what was streamed.
    page.reload()
    expect(page.locator(".message")).to_have_count(4)
    expect(reply(page, 0)).to_have_attribute("data-status", "complete")
    expect(reply(page, 0)).to_contain_text("word199")
    expect(reply(page, 1)).to_have_attribute("data-status", "interrupted")
    assert reply(page, 1).locator(".message-text").inner_text() == stopped_text
    expect(page.locator(".message-user").nth(1)).to_contain_text("Another long one")

    # Writing the stopped reply again replaces it in place: the question is not sent a second time.
    reply(page, 1).get_by_role("button", name="Write it again").click()
    expect(reply(page, 1)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(reply(page, 1)).to_contain_text("word199")
    expect(page.locator(".message")).to_have_count(4)
    expect(page.locator(".retry-form")).to_have_count(0)
    page.reload()
    expect(page.locator(".message")).to_have_count(4)
    expect(reply(page, 1)).to_have_attribute("data-status", "complete")


def test_rename_delete_and_phone_sidebar(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "bob")
    # A suggestion fills the composer and sends itself.
    page.get_by_role("button", name="Suggest a weekend trip for someone who hates crowds.").click()
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-user").first).to_contain_text("Suggest a weekend trip")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    # "New conversation" opens the start page; nothing is created until the first message.
    page.click("text=New conversation")
    expect(page).to_have_url(f"{base}/")
    expect(page.locator("#conversation-list li[id^=conversation-]")).to_have_count(1)  # the "Today" heading aside
    page.locator("#conversation-list a").first.click()
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    page.click(".title-row summary")
    page.locator(".title-row").get_by_text("Rename").click()
    page.fill("#rename-title", "Trip ideas")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-header .title")).to_have_text("Trip ideas")
    expect(page.locator("#conversation-list")).to_contain_text("Trip ideas")

    page.set_viewport_size({"width": 375, "height": 740})
    expect(page.locator("#sidebar")).not_to_be_visible()
    page.click(".sidebar-open")
    expect(page.locator("#sidebar")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar")).not_to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    page.click(".title-row summary")
    page.click(".menu-items >> text=Delete")
    expect(page).to_have_url(f"{base}/")
    expect(page.locator("#conversation-list")).not_to_contain_text("Trip ideas")

    # A temporary chat is listed while it is open, and leaves the list once left.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.check("#start-temporary")
    page.fill("#start-input", "Just between us")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator("#conversation-list")).to_contain_text("Just between us")
    page.click("text=New conversation")
    expect(page.locator("#conversation-list")).not_to_contain_text("Just between us")


def test_markdown_reply_and_screenshots(page: Any, live_server_url: str, screenshots: Path) -> None:
    base = live_server_url
    sign_up(page, base, "carol")
    for text in ("Plan a weekend in Lisbon", "Explain Python decorators"):
        page.goto(f"{base}/")
        page.fill("#start-input", text)
        page.keyboard.press("Enter")
        expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    page.goto(f"{base}/")
    page.fill("#start-input", "I've always liked small phones, they're easy to use one-handed. Any suggestions?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    expect(reply(page, 0).locator("ol li")).to_have_count(3)
    page.fill("#composer-input", "How is their battery life?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(2)
    link = reply(page, 1).locator("a")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "nofollow noopener")

    page.mouse.move(0, 0)
    page.screenshot(path=str(screenshots / "chat-desktop.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.evaluate("document.getElementById('scroller').scrollTop = 0")
    page.screenshot(path=str(screenshots / "chat-phone.png"))


def test_a_reply_follows_every_tab_outlives_its_page_and_stops_from_another(browser: Any, live_server_url: str) -> None:
    base = live_server_url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    first, second = context.new_page(), context.new_page()
    try:
        sign_up(first, base, "dora")
        first.fill("#start-input", "Something long, please")
        first.keyboard.press("Enter")
        expect(first).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
        expect(reply(first, 0).locator(".streaming-text")).to_contain_text("word2")

        # A second tab opened mid-reply shows the text so far, keeps streaming and offers Stop.
        second.goto(first.url)
        expect(reply(second, 0)).to_have_attribute("data-status", "streaming")
        expect(reply(second, 0).locator(".streaming-text")).to_contain_text("word40")
        expect(second.locator("#stop-btn")).to_be_visible()

        # Closing the first page does not stop the reply.
        first.close()
        expect(reply(second, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
        expect(reply(second, 0)).to_contain_text("word199")

        # Two tabs on one reply: Stop in either stops it in both.
        first = context.new_page()
        first.goto(second.url)
        expect(first.locator("#turn-live")).to_have_attribute("data-live", "1")
        second.fill("#composer-input", "Another long one")
        second.keyboard.press("Enter")
        expect(reply(first, 1).locator(".streaming-text")).to_contain_text("word5")
        first.click("#stop-btn")
        for tab in (first, second):
            expect(reply(tab, 1)).to_have_attribute("data-status", "interrupted")
            expect(tab.locator("#composer .send-btn")).to_be_enabled()
        assert (
            reply(first, 1).locator(".message-text").inner_text()
            == reply(second, 1).locator(".message-text").inner_text()
        )
    finally:
        context.close()
