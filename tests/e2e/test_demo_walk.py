"""The README's two-minute demo, walked in Chromium exactly as written (offline demo model, a real
Celery worker): it ends on Settings → Memory showing a memory and the message it came from. Then
what the walk leaves on that page: search by the source's words, and History after a Restore."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import open_start_page, sign_up

pytestmark = pytest.mark.browser

SMALL = "Prefers small phones, finds them easier to use one-handed"
BIG = "Prefers large-screen phones"


@pytest.fixture(scope="module")
def demo_url(demo_stack_url: str) -> str:
    """`make run` as the README's reader gets it: the demo model, a worker, and the demo account."""
    return demo_stack_url


def say(page: Any, text: str) -> None:
    """Type into the conversation's composer, press Enter, wait for the reply."""
    replies = page.locator(".message-assistant")
    before = replies.count()
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    expect(replies.nth(before)).to_have_attribute("data-status", "complete", timeout=20_000)


def start(page: Any, text: str) -> None:
    """The first message of a new conversation, from the start page."""
    page.fill("#start-input", text)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete", timeout=20_000)


def open_memory_settings(page: Any) -> None:
    page.click(".user-menu summary")
    page.get_by_role("link", name="Settings → Memory").click()
    expect(page.get_by_role("heading", name="Active memories")).to_be_visible()
    page.wait_for_load_state("load")  # its scripts (search as you type) have run


def memory_row(page: Any, where: str, text: str) -> Any:
    rows = page.locator(f"{where} .memory-row")
    return rows.filter(has=page.locator(".memory-content", has_text=re.compile(rf"^\s*{re.escape(text)}\s*$")))


def test_the_readme_demo_ends_on_a_memory_and_the_message_it_came_from(page: Any, demo_url: str) -> None:
    base = demo_url
    # 1. Log in as demo / demo.
    page.goto(f"{base}/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/")
    page.wait_for_load_state("load")  # the start page's scripts have run (Enter sends)
    # 2. Two messages in one conversation.
    start(page, "I've always liked small phones, they're easy to use one-handed.")
    say(page, "Today I'm helping a friend pick a phone — his budget this time is 3000.")
    # 3. A new conversation: the third pending message; the worker's run brings a notice.
    open_start_page(page, base)
    start(page, "I want a new phone, suggest a few.")
    expect(page.locator(".notice-memory").first).to_contain_text(f"remembered “{SMALL}”", timeout=15_000)
    conversation = page.url
    # 4. A correction replaces the memory.
    say(page, "I prefer big screens now.")
    # 5. Settings → Memory: the active memory and the message it came from; History keeps the old one with its own.
    open_memory_settings(page)
    active = memory_row(page, "#memory-list", BIG)
    expect(active.locator(".source-link")).to_have_text("“I prefer big screens now.”")
    old = memory_row(page, "#memory-history", SMALL)
    expect(old.locator(".source-link")).to_contain_text("I've always liked small phones")
    audit(page, "memory page after the demo's step 5")
    # 6. Forget it: History shows it, forgotten, still with the message it came from.
    page.goto(conversation)
    say(page, "Please forget my screen preference.")
    open_memory_settings(page)
    expect(page.locator("#memory-list > .memory-row")).to_have_count(0)
    forgotten = memory_row(page, "#memory-history", BIG)
    expect(forgotten).to_contain_text("Forgotten when you asked")
    expect(forgotten.locator(".source-link")).to_have_text("“I prefer big screens now.”")

    # Search finds a memory by the words of the message it came from, even when they are apart.
    page.fill("#memory-search", "liked one-handed")
    expect(page.locator("#memory-history .memory-row")).to_have_count(1)
    expect(memory_row(page, "#memory-history", SMALL)).to_have_count(1)
    page.fill("#memory-search", "")
    expect(page.locator("#memory-history .memory-row")).to_have_count(2)

    # History after a Restore says what became of each version.
    memory_row(page, "#memory-history", SMALL).get_by_role("button", name="Restore").click()
    expect(memory_row(page, "#memory-list", SMALL)).to_contain_text("Restored by you")
    expect(memory_row(page, "#memory-history", SMALL)).to_have_count(0)  # in use again: listed once
    forgotten = memory_row(page, "#memory-history", BIG)
    expect(forgotten).to_contain_text(f"Later you restored an earlier version “{SMALL}” (in use now)")
    expect(forgotten).not_to_contain_text("Restored later as")
    page.reload()  # the page as loaded says the same
    expect(memory_row(page, "#memory-history", SMALL)).to_have_count(0)
    expect(memory_row(page, "#memory-list", SMALL)).to_have_count(1)
    audit(page, "memory page, history after a restore")


def test_a_refused_add_does_not_keep_the_previous_added_message(page: Any, demo_url: str) -> None:
    sign_up(page, demo_url, "toast")
    page.goto(f"{demo_url}/settings/memory/")
    page.fill("#memory-add-input", "Prefers tea")
    page.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-status")).to_have_text("Memory added.")
    page.fill("#memory-add-input", "x" * 501)
    page.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-add .field-errors")).to_be_visible()
    expect(page.locator("#memory-status")).to_have_text("")
