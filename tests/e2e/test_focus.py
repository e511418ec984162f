"""Focus lands where a keyboard user expects after each action (and the page stays accessible)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


def focused_id(page: Any) -> str:
    return str(page.evaluate("document.activeElement && document.activeElement.id"))


def add_memory(page: Any, text: str) -> None:
    page.fill("#memory-add-input", text)
    page.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-list > .memory-row", has_text=text)).to_have_count(1)


def test_memory_switch_keeps_focus_after_a_keyboard_toggle(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "focus-switch")
    page.goto(f"{live_server_url}/settings/memory/")
    add_memory(page, "Prefers tea")
    switch = page.get_by_role("switch", name="Memory")
    switch.focus()
    page.keyboard.press("Space")
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(switch).to_be_focused()
    page.keyboard.press("Space")  # a second Space toggles back rather than opening an editor
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(switch).to_be_focused()
    expect(page.locator(".memory-row.is-editing")).to_have_count(0)


def test_restore_focuses_the_restored_memory(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "focus-restore")
    page.goto(f"{live_server_url}/settings/memory/")
    add_memory(page, "Lives in Lyon")
    add_memory(page, "Prefers tea")
    row = page.locator("#memory-list > .memory-row", has_text="Lives in Lyon")
    row.get_by_role("button", name="Edit").click()
    page.locator(".memory-row.is-editing textarea").fill("Lives in Paris")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#memory-history .memory-row")).to_have_count(1)
    page.locator("#memory-history").get_by_role("button", name="Restore").focus()
    page.keyboard.press("Enter")
    restored = page.locator("#memory-list > .memory-row", has_text="Lives in Lyon")
    expect(restored).to_contain_text("Restored by you")
    expect(restored.get_by_role("button", name="Edit")).to_be_focused()


def test_cancelling_forget_everything_returns_to_its_button(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "focus-forget")
    page.goto(f"{live_server_url}/settings/memory/")
    add_memory(page, "Prefers tea")
    page.get_by_role("button", name="Forget everything").focus()
    page.keyboard.press("Enter")
    cancel = page.locator("#memory-forget").get_by_role("button", name="Cancel")
    expect(cancel).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#memory-forget").get_by_role("button", name="Forget everything")).to_be_focused()
    page.keyboard.press("Enter")
    expect(cancel).to_be_focused()
    page.keyboard.press("Escape")  # Escape cancels too
    expect(page.locator("#memory-forget").get_by_role("button", name="Forget everything")).to_be_focused()


def test_stop_by_keyboard_returns_to_the_composer_and_rename_to_the_title(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "focus-chat")
    page.fill("#start-input", "Write something long")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    reply = page.locator(".message-assistant").first
    expect(reply.locator(".streaming-text")).to_contain_text("word3")
    page.locator("#stop-btn").focus()
    page.keyboard.press("Enter")
    expect(reply).to_have_attribute("data-status", "interrupted")
    expect(page.locator("#composer-input")).to_be_focused()
    expect(page.locator("#reply-announcer")).to_contain_text("Reply stopped.")

    page.click(".title-row summary")
    page.locator(".title-row").get_by_text("Rename").click()
    expect(page.locator("#rename-title")).to_be_focused()
    page.fill("#rename-title", "   ")
    page.keyboard.press("Enter")
    expect(page.locator("#rename-errors")).to_contain_text("A title cannot be empty")
    expect(page.locator("#rename-title")).to_be_focused()
    expect(page.locator(".messages .message")).to_have_count(2)  # still the conversation page
    audit(page, "rename refused")
    page.fill("#rename-title", "Long texts")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-header h1")).to_have_text("Long texts")
    expect(page.locator(".chat-header h1")).to_be_focused()


def test_phone_sidebar_traps_focus_while_open(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "focus-sidebar")
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator(".chat-header .sidebar-open").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#sidebar")).to_be_visible()
    inside = []
    for _ in range(12):
        page.keyboard.press("Tab")
        inside.append(page.evaluate("document.getElementById('sidebar').contains(document.activeElement)"))
    assert all(inside)
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.getElementById('sidebar').contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar")).not_to_be_visible()
    expect(page.locator(".chat-header .sidebar-open")).to_be_focused()


def test_a_rename_pushed_from_another_tab_leaves_focus_where_it_was(page: Any, live_server_url: str) -> None:
    """The title and the list are drawn again when another tab renames the conversation: focus stays on
    the new copy of the element the keyboard user was on, not on the page's body."""
    base = live_server_url
    sign_up(page, base, "focus-pushed")
    page.fill("#start-input", "Chat about focus")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete")
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_load_state("load")

    def rename_in_other_tab(title: str) -> None:
        # That tab's previous rename comes back to it too, as a push that draws its header again and closes
        # a menu opened just before: the menu is opened again until its item is clicked.
        for _ in range(3):
            other.click(".title-row summary")
            try:
                other.locator(".title-row").get_by_role("link", name="Rename", exact=True).click(timeout=10_000)
                break
            except PlaywrightTimeoutError:
                continue
        else:
            raise AssertionError("the title's menu never stayed open")
        other.fill("#rename-title", title)
        other.keyboard.press("Enter")
        expect(other.locator(".chat-header h1")).to_have_text(title)

    title = page.locator(".chat-header h1")
    title.focus()
    rename_in_other_tab("Renamed elsewhere")
    expect(title).to_have_text("Renamed elsewhere")
    expect(title).to_be_focused()

    actions = page.locator("#conversation-nav .conversation-item summary").first
    actions.focus()
    rename_in_other_tab("Renamed again")
    expect(page.locator("#conversation-nav .conversation-item").first).to_contain_text("Renamed again")
    expect(actions).to_be_focused()
    other.close()
