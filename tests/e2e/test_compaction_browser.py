"""A long conversation in Chromium against a provider with a small context window: every turn is
answered, the page shows where earlier messages were summarized as soon as they are (and the same after a
reload), summary expandable."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import sign_up
from tests.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.browser

WINDOW = 2000  # the provider's; the server's CHAT_CONTEXT_TOKENS is larger, so it learns this one from refusals


def test_a_small_window_summarizes_earlier_messages_behind_a_divider(
    page: Any, live_server_url: str, provider: FakeOpenAIServer
) -> None:
    base = live_server_url
    sign_up(page, base, "long-talker")
    page.fill("#start-input", "Message 0: I want a small phone, my budget is 600 euros.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete")
    provider.context_window = WINDOW
    try:
        for i in range(1, 12):
            page.fill("#composer-input", f"Message {i}: " + "tell me more about the battery and the camera, " * 6)
            page.keyboard.press("Enter")
            expect(page.locator(".message-assistant").nth(i)).to_have_attribute(
                "data-status", "complete", timeout=20_000
            )
    finally:
        provider.context_window = None
    assert provider.refused >= 1  # the provider did refuse, and every turn was still answered
    # The divider appeared live, when the summary was applied, before any reload.
    expect(page.locator(".summary-divider")).to_have_count(1)
    live = page.evaluate("[...document.querySelectorAll('#messages > *')].map(e => e.id || e.className)")

    page.reload()
    # A reload puts it in the same place.
    assert page.evaluate("[...document.querySelectorAll('#messages > *')].map(e => e.id || e.className)") == live
    divider = page.locator(".summary-divider")
    expect(divider).to_have_count(1)
    expect(divider).to_contain_text("Earlier messages were summarized for the assistant")
    expect(page.locator(".message-user")).to_have_count(12)  # the display log keeps every message
    expect(page.locator(".message-user").first).to_contain_text("Message 0")
    text = divider.locator(".summary-divider-text")
    expect(text).to_be_hidden()
    divider.locator("summary").click()
    expect(text).to_be_visible()
