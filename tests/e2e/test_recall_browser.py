"""What a reply used, in Chromium: "Used N memories" under the reply (collapsed, linking to the memory),
and its Wrong and Outdated actions, which leave the next turn's model input without the memory."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up
from tests.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.browser


def add_memory(page: Any, base: str, text: str) -> None:
    page.goto(f"{base}/settings/memory/")
    page.fill("#memory-add-input", text)
    page.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-list .memory-content", has_text=text)).to_be_visible()


def send(page: Any, text: str) -> Any:
    replies = page.locator(".message-assistant")
    before = replies.count()
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    reply = replies.nth(before)
    expect(reply).to_have_attribute("data-status", "complete", timeout=20_000)
    return reply


def last_system_prompt(provider: FakeOpenAIServer) -> str:
    request = [r for r in provider.requests if r.get("stream")][-1]
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def test_used_memories_show_under_the_reply_and_wrong_and_outdated_work(
    page: Any, live_server_url: str, provider: FakeOpenAIServer
) -> None:
    base = live_server_url
    sign_up(page, base, "recall-alice")
    add_memory(page, base, "Is allergic to peanuts")
    add_memory(page, base, "Lives in Lyon")

    page.goto(f"{base}/")
    page.fill("#start-input", "Is peanut butter a good snack?")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    reply = page.locator(".message-assistant").first
    expect(reply).to_have_attribute("data-status", "complete", timeout=20_000)
    assert "Is allergic to peanuts" in last_system_prompt(provider)

    used = reply.locator("details.reply-memories")
    expect(used.locator("summary")).to_have_text(re.compile(r"^Used 1 memory( · memory: \d+ tokens)?$"))
    expect(used.locator("a", has_text="Is allergic to peanuts")).to_be_hidden()  # collapsed
    used.locator("summary").click()
    link = used.locator("a", has_text="Is allergic to peanuts")
    expect(link).to_have_attribute("href", re.compile(r"/settings/memory/#memory-\d+$"))

    used.get_by_role("button", name="Wrong").click()  # asks in the line itself
    used.locator(".reply-memory-confirm").get_by_role("button", name="Delete").click()
    expect(used.locator(".reply-memory-outcome")).to_contain_text("Deleted")

    second = send(page, "Any peanut snacks for the trip then?")
    assert "peanuts" not in last_system_prompt(provider)
    expect(second.locator("details.reply-memories")).to_have_count(0)

    third = send(page, "What is the weather like in Lyon?")
    assert "Lives in Lyon" in last_system_prompt(provider)
    third.locator("details.reply-memories summary").click()
    third.get_by_role("button", name="Outdated").click()
    expect(third.locator(".reply-memory-outcome")).to_contain_text("Moved to History")

    send(page, "And in Lyon tomorrow?")
    assert "Lives in Lyon" not in last_system_prompt(provider)

    # A reload shows what each reply used as it was (the deleted memory's record went with it).
    page.reload()
    expect(page.locator("details.reply-memories summary")).to_have_text(
        [re.compile(r"^Used 1 memory( · memory: \d+ tokens)?$")]
    )
    page.locator("details.reply-memories summary").click()
    audit(page, "a reply's used memories, opened")
    page.goto(f"{base}/settings/memory/")
    expect(page.locator("#memory-history .memory-content", has_text="Lives in Lyon")).to_be_visible()
