"""Search in Chromium: type in the sidebar box, open a result at its message, Escape back to the list;
the keyboard shortcuts; the page without JavaScript; axe on every state (tests/e2e/axe.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import open_start_page, sign_up

pytestmark = pytest.mark.browser


def send(page: Any, text: str, replies: int) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(replies, timeout=20_000)


def test_search_from_the_sidebar_opens_the_message_and_escape_brings_the_list_back(
    page: Any, live_server_url: str
) -> None:
    base = live_server_url
    sign_up(page, base, "searcher")
    page.fill("#start-input", "I have always liked small phones")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    for n in range(6):  # enough to scroll: the found message is not at the end
        send(page, f"Filler message number {n}, please answer briefly", n + 2)
    open_start_page(page, base)
    page.fill("#start-input", "我想买一部智能手机")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)

    # "/" focuses the box; typing replaces the list with results, the match marked.
    page.locator("#main").click()
    page.keyboard.press("/")
    expect(page.locator("#search-input")).to_be_focused()
    page.keyboard.type("small pho")
    results = page.locator("#search-results")
    expect(results).to_be_visible()
    expect(page.locator(".conversation-nav")).to_be_hidden()
    # The message, the title it gave, and the reply (about small phones).
    expect(results.locator(".search-hit")).to_have_count(3)
    expect(results.locator("mark").first).to_have_text(re.compile("^small$", re.I))
    expect(page.locator("#search-status")).to_have_text("3 results")
    audit(page, "sidebar search results")

    # Escape clears the search and brings the conversation list back.
    page.locator("#search-input").press("Escape")
    expect(page.locator("#search-input")).to_have_value("")
    expect(results).to_be_hidden()
    expect(page.locator(".conversation-nav")).to_be_visible()

    # Ctrl+K, a two-character Chinese word, then open the result at its message.
    page.keyboard.press("Control+k")
    expect(page.locator("#search-input")).to_be_focused()
    page.keyboard.type("手机")
    expect(results.locator(".search-hit")).to_have_count(2)
    expect(results.locator("mark").first).to_have_text("手机")
    page.fill("#search-input", "")
    page.keyboard.type("small phones")
    link = results.locator(".search-hit a").filter(has_text="You said:")
    link.click()
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/#message-\d+$"))
    target = page.locator(".message:target")
    expect(target).to_contain_text("I have always liked small phones")
    expect(target).to_be_in_viewport()

    page.goto(f"{base}/search/?q=phone")
    expect(page.locator(".search-page .search-hit")).to_have_count(3)
    audit(page, "search page")


def test_search_works_as_a_plain_page_without_javascript(browser: Any, live_server_url: str) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        base = live_server_url
        sign_up(page, base, "no-script-searcher")
        page.fill("#search-input", "anything")
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{base}/search/?q=anything")
        expect(page.locator(".search-page")).to_contain_text("0 results")
        expect(page.locator("#search-page-input")).to_have_value("anything")
    finally:
        context.close()
