"""Tidy up in Chromium, on the offline demo model: three memories saying one thing become a suggestion on
Settings → Memory; Accept merges them into one, Undo brings the three back; axe finds nothing serious, in
English and in Chinese."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser

SAME = ["I like green tea", "Likes green tea", "I like green tea."]


@pytest.fixture(scope="module")
def demo_url(demo_web_url: str) -> str:
    return demo_web_url


def add_memories(page: Any, base: str) -> None:
    page.goto(f"{base}/settings/memory/")
    for count, text in enumerate(SAME, start=1):
        page.fill("#memory-add-input", text)
        page.locator("form:has(#memory-add-input) button[type=submit]").click()
        expect(page.locator("#memory-list > li.memory-row")).to_have_count(count)
    page.goto(f"{base}/settings/memory/")


def test_review_accept_and_undo_on_the_page(page: Any, demo_url: str) -> None:
    sign_up(page, demo_url, "tidier")
    add_memories(page, demo_url)
    tidy = page.locator("#memory-tidy")
    expect(tidy).to_contain_text("1 group to review")
    tidy.get_by_role("button", name="Tidy up").click()
    row = page.locator("#memory-tidy .tidy-list .tidy-row")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Merge into one")
    expect(row.locator(".tidy-before li")).to_have_count(3)
    expect(row.locator(".tidy-after")).to_contain_text("I like green tea.")
    audit(page, "tidy-up suggestion waiting")
    row.get_by_role("button", name="Accept").click()
    active = page.locator("#memory-list > li.memory-row")
    expect(page.locator("#memory-tidy .tidy-done .tidy-row")).to_have_count(1)
    expect(active).to_have_count(1)
    page.locator("#memory-tidy .tidy-done").get_by_role("button", name="Undo").click()
    expect(active).to_have_count(3)
    expect(page.locator("#memory-tidy .tidy-done")).to_have_count(0)


def test_the_tidy_up_section_is_chinese(browser: Any, demo_url: str) -> None:
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        sign_up(page, demo_url, "tidier-zh")
        add_memories(page, demo_url)
        page.locator("#memory-tidy form.tidy-run button").click()
        row = page.locator("#memory-tidy .tidy-list .tidy-row")
        expect(row).to_contain_text("合并为一条")
        expect(page.locator("#memory-tidy-title")).to_contain_text("整理建议")
        audit(page, "tidy-up suggestion waiting, in Chinese")
    finally:
        context.close()
