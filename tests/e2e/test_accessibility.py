"""Every page of the app, and the states its forms and menus open, checked with axe-core at desktop
and phone width, in light and dark (see tests/e2e/axe.py). Any serious or critical violation fails."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import PASSWORD, sign_up

pytestmark = pytest.mark.browser


def test_signed_out_pages(page: Any, live_server_url: str) -> None:
    base = live_server_url
    page.goto(f"{base}/accounts/login/")
    audit(page, "log in")
    page.fill("#id_username", "nobody")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    expect(page.locator(".form-errors")).to_be_visible()
    audit(page, "log in, refused")
    page.goto(f"{base}/accounts/signup/")
    audit(page, "sign up")
    page.fill("#id_username", "a")
    page.fill("#id_password1", "short")
    page.fill("#id_password2", "other")
    page.click("button[type=submit]")
    expect(page.locator(".field-errors").first).to_be_visible()
    audit(page, "sign up, with errors")


def test_chat_pages_and_states(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "axe-chat")
    audit(page, "start page, first visit")

    page.fill("#start-input", "Show me a wide code sample")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    expect(page.locator(".message-assistant pre")).to_have_count(1)
    audit(page, "conversation with a code block")
    conversation_url = page.url

    page.click(".title-row summary")
    audit(page, "conversation menu open")
    page.locator(".title-row").get_by_text("Rename").click()
    expect(page.locator("#rename-title")).to_be_visible()
    audit(page, "rename form")
    page.keyboard.press("Escape")

    page.set_viewport_size({"width": 390, "height": 844})
    page.click(".sidebar-open")
    expect(page.locator("#sidebar")).to_be_visible()
    audit(page, "phone sidebar open")
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 1280, "height": 800})

    page.goto(f"{conversation_url}rename/")
    audit(page, "rename page (without JavaScript's help)")
    page.goto(f"{conversation_url}delete/")
    audit(page, "delete confirmation page")

    page.goto(f"{base}/")
    audit(page, "start page with conversations")
    page.goto(f"{base}/accounts/password/")
    audit(page, "change password")
    page.fill("#id_old_password", PASSWORD)
    page.fill("#id_new_password1", PASSWORD + "-2")
    page.fill("#id_new_password2", PASSWORD + "-2")
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/accounts/password/done/")
    audit(page, "password changed")

    page.goto(f"{base}/")
    page.click(".user-menu summary")
    audit(page, "user menu open")
    page.click("text=Log out")
    expect(page).to_have_url(f"{base}/accounts/logged-out/")
    expect(page.get_by_role("heading", name="You’re logged out")).to_be_visible()
    audit(page, "logged out")


def test_memory_page_states(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "axe-memory")
    page.goto(f"{base}/settings/memory/")
    audit(page, "memory page, empty")

    expect(page.get_by_role("button", name="Forget everything")).to_be_disabled()
    expect(page.locator("#memory-forget")).to_contain_text("Nothing to forget right now.")

    for text in ("Prefers metric units", "Lives in Lyon"):
        page.fill("#memory-add-input", text)
        page.get_by_role("button", name="Add memory").click()
        expect(page.locator("#memory-list > .memory-row", has_text=text)).to_have_count(1)
    audit(page, "memory page with memories and a status")

    page.fill("#memory-add-input", "x" * 501)
    page.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-add .field-errors")).to_be_visible()
    audit(page, "add memory refused")
    page.fill("#memory-add-input", "")

    rows = page.locator("#memory-list > .memory-row")
    rows.first.get_by_role("button", name="Edit").click()
    expect(page.locator(".memory-row.is-editing textarea")).to_be_focused()
    audit(page, "editing a memory")
    page.locator(".memory-row.is-editing textarea").fill("Lives in Lyon, France")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#memory-history .memory-row")).to_have_count(1)
    audit(page, "memory page with history")

    rows.first.get_by_role("button", name="Delete").click()
    expect(page.locator(".memory-row.is-confirming")).to_have_count(1)
    audit(page, "confirming a delete")
    page.keyboard.press("Escape")

    page.fill("#memory-search", "nothing like this")
    expect(page.locator("#memory-list")).to_contain_text("No active memory contains")
    expect(page.locator("#memory-history")).to_contain_text("Nothing in History contains")
    expect(page.locator("#memory-status")).to_have_text("0 active memories and 0 in History match “nothing like this”.")
    audit(page, "search without results")
    page.fill("#memory-search", "Lyon")
    expect(page.locator("#memory-status")).to_have_text("1 active memory and 1 in History match “Lyon”.")
    expect(page.locator("#memory-history .memory-row")).to_have_count(1)
    page.fill("#memory-search", "")
    expect(page.locator("#memory-history .memory-row")).to_have_count(1)

    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("button", name="Cancel")).to_be_visible()
    audit(page, "forget everything, confirming")
    page.get_by_role("button", name="Forget everything").nth(0).click()
    expect(page.locator("#memory-status")).to_contain_text("Forgot")
    audit(page, "everything forgotten")

    page.get_by_role("switch", name="Memory").click()
    expect(page.get_by_role("switch", name="Memory")).to_have_attribute("aria-checked", "false")
    audit(page, "memory off")
    page.goto(f"{base}/")
    audit(page, "start page, memory off")
