"""The conversation list in Chromium: date groups, the filter box, rename and pin from the list, and
every open tab following a change made in another (docs/sidebar.md); keyboard only, axe on each state."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import manage, sign_up

pytestmark = pytest.mark.browser


def start(page: Any, base: str, text: str) -> str:
    """A new conversation whose first message (and so its title) is `text`; its address."""
    page.goto(f"{base}/")
    page.fill("#start-input", text)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant.is-complete")).to_have_count(1)
    return str(page.url)


def age(env: dict[str, str], title: str, days: int) -> None:
    """Make the conversation titled `title` last active `days` ago (what no page can do)."""
    code = (
        "from datetime import timedelta; from django.utils import timezone; from chat.models import Conversation; "
        f"Conversation.objects.filter(title={title!r}).update(updated_at=timezone.now() - timedelta(days={days}))"
    )
    manage(env, "shell", "-c", code)


def item(page: Any, title: str) -> Any:
    return page.locator("#conversation-nav .conversation-item", has_text=title)


def dated(page: Any) -> list[str]:
    """The dated part of the list as shown: headings and titles, in order."""
    rows = page.locator("#conversation-list > li:visible")
    return [t.strip().split("\n")[0] for t in rows.all_inner_texts()]


def test_the_list_groups_by_date_and_a_conversation_that_becomes_active_moves_under_today(
    page: Any, live_server_url: str, live_server_env: dict[str, str]
) -> None:
    sign_up(page, live_server_url, "grouper")
    garden = start(page, live_server_url, "Plans for the garden")
    start(page, live_server_url, "Notes on the recipe")
    start(page, live_server_url, "Ideas for the holiday")
    age(live_server_env, "Plans for the garden", 3)
    age(live_server_env, "Notes on the recipe", 1)
    page.goto(garden)
    expect(page.locator("#conversation-list h2")).to_have_count(3)
    assert dated(page) == [
        "Today", "Ideas for the holiday", "Yesterday", "Notes on the recipe", "Previous 7 days", "Plans for the garden",
    ]  # fmt: skip
    audit(page, "the list under its date headings")

    # A new message: the conversation goes right under Today; the heading it leaves empty goes.
    page.fill("#composer-input", "One more thing about roses")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.is-complete")).to_have_count(2)
    expect(page.locator("#conversation-list > li:visible").nth(1)).to_contain_text("Plans for the garden")
    assert dated(page) == ["Today", "Plans for the garden", "Ideas for the holiday", "Yesterday", "Notes on the recipe"]
    expect(page.get_by_role("heading", name="Previous 7 days")).to_be_hidden()


def test_the_filter_narrows_the_list_by_title_as_typed_and_announces_the_count_by_keyboard(
    page: Any, live_server_url: str
) -> None:
    sign_up(page, live_server_url, "filterer")
    for text in ("Trip to Lisbon", "Lisbon food guide", "Python decorators"):
        start(page, live_server_url, text)
    box = page.get_by_role("searchbox", name="Filter conversations by title")
    box.focus()
    page.keyboard.type("lisbon")
    status = page.locator("#sidebar-filter-status")
    expect(status).to_have_text("2 conversation titles hold “lisbon”.")
    expect(page.locator("#conversation-nav .conversation-item")).to_have_count(2)
    expect(item(page, "Python decorators")).to_have_count(0)
    expect(box).to_be_focused()
    audit(page, "the list filtered by title")

    box.focus()  # the audit resized the page (the phone width closes the sidebar)
    page.keyboard.press("End")
    page.keyboard.type(" zz")
    expect(page.locator("#conversation-nav")).to_contain_text("No conversation title holds “lisbon zz”.")
    expect(status).to_have_text("0 conversation titles hold “lisbon zz”.")

    page.keyboard.press("Escape")  # empties the box: everything is listed again, and it is said
    expect(box).to_have_value("")
    expect(status).to_have_text("Filter cleared: every conversation is listed.")
    expect(page.locator("#conversation-nav .conversation-item")).to_have_count(3)
    expect(box).to_be_focused()


def open_actions(page: Any, title: str) -> Any:
    summary = item(page, title).locator("summary")
    summary.focus()
    page.keyboard.press("Enter")
    return summary


def test_a_swap_landing_while_a_list_rename_is_answered_leaves_focus_for_that_answer(
    page: Any, live_server_url: str
) -> None:
    """Focus goes to the renamed conversation's actions once the rename's own answer is in, even when another
    swap (here one fired by hand, in a real session a redraw pushed meanwhile) lands while it is on its way."""
    sign_up(page, live_server_url, "swapracer")
    start(page, live_server_url, "Chat about rain")
    held: list[Any] = []

    def hold_the_rename(route: Any) -> None:
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/rename/"), hold_the_rename)
    open_actions(page, "Chat about rain")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    box = page.get_by_role("textbox", name="New title")
    expect(box).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("Rain gauges")
    page.keyboard.press("Enter")
    for _ in range(100):  # until the POST is on its way, and held
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    page.evaluate(
        """() => new Promise(done => {
            const spot = document.createElement("div");
            spot.id = "unrelated-swap";
            document.body.append(spot);
            document.body.addEventListener("htmx:afterSwap", () => done(null), { once: true });
            window.htmx.ajax("GET", "/accounts/login/", { target: "#unrelated-swap", select: "h1" });
        })"""
    )
    held[0].continue_()
    expect(item(page, "Rain gauges")).to_have_count(1)
    expect(item(page, "Rain gauges").locator("summary")).to_be_focused()


def test_rename_a_conversation_in_place_from_the_list_by_keyboard(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "listrenamer")
    start(page, live_server_url, "Chat about tea")
    start(page, live_server_url, "Chat about coffee")
    expect(item(page, "Chat about tea").locator("summary")).to_have_accessible_name("Chat about tea Actions")

    open_actions(page, "Chat about tea")
    page.keyboard.press("Tab")
    expect(item(page, "Chat about tea").get_by_role("link", name="Rename")).to_be_focused()
    page.keyboard.press("Enter")
    box = page.get_by_role("textbox", name="New title")
    expect(box).to_be_focused()
    audit(page, "renaming a conversation in the list")
    box.focus()  # the audit resized the page (the phone width closes the sidebar)
    page.keyboard.press("Control+A")
    page.keyboard.type("Tea tasting notes")
    page.keyboard.press("Enter")
    expect(item(page, "Tea tasting notes")).to_have_count(1)
    expect(item(page, "Tea tasting notes").locator("summary")).to_be_focused()
    expect(page.locator(".chat-header .title")).to_have_text("Chat about coffee")  # another conversation's page

    # Escape gives the item back unchanged, focus on its actions.
    open_actions(page, "Tea tasting notes")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(box).to_be_focused()
    page.keyboard.type("Never saved")
    page.keyboard.press("Escape")
    expect(item(page, "Tea tasting notes").locator("summary")).to_be_focused()
    expect(page.locator("#conversation-nav")).not_to_contain_text("Never saved")

    # Renamed from the list, the open conversation's title changes too.
    open_actions(page, "Chat about coffee")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(box).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("Coffee grinders")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-header .title")).to_have_text("Coffee grinders")
    page.reload()
    expect(item(page, "Tea tasting notes")).to_have_count(1)
    expect(item(page, "Coffee grinders").get_by_role("link")).to_have_attribute("aria-current", "page")


def test_pin_from_the_list_by_keyboard_keeps_focus_on_the_conversation(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "listpinner")
    start(page, live_server_url, "Chat about maps")
    start(page, live_server_url, "Chat about trains")
    open_actions(page, "Chat about maps")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Pin to the top")
    page.keyboard.press("Enter")
    pinned = page.locator("#pinned-list")
    expect(pinned).to_contain_text("Chat about maps")
    expect(item(page, "Chat about maps").locator("summary")).to_be_focused()
    expect(page.locator("#conversation-list")).not_to_contain_text("Chat about maps")
    audit(page, "a conversation pinned from the list")

    open_actions(page, "Chat about maps")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Unpin")
    page.keyboard.press("Enter")
    expect(page.locator("#pinned-list")).to_have_count(0)
    expect(page.locator("#conversation-list")).to_contain_text("Chat about maps")


def test_a_rename_pin_or_edit_in_one_tab_reaches_the_users_other_tabs(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "twotabs")
    alpha = start(page, live_server_url, "Alpha topic")
    start(page, live_server_url, "Beta topic")
    other = page.context.new_page()
    other.goto(alpha)
    expect(other.locator("#turn-live")).to_have_attribute("data-live", "1")

    # Renamed in the first tab (from its list), the second tab's list and title follow.
    page.bring_to_front()
    open_actions(page, "Alpha topic")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="New title")).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("Alpha renamed")
    page.keyboard.press("Enter")
    expect(other.locator(".chat-header .title")).to_have_text("Alpha renamed")
    expect(other.locator("#conversation-nav")).to_contain_text("Alpha renamed")

    # Pinned in the first tab (its header menu), the second tab lists it on top.
    page.locator(".title-row summary").focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Pin to the top").focus()
    # The header's pin answers with a client redirect (a full reload): wait for it to finish, or the
    # next goto races it.
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(other.locator("#pinned-list")).to_contain_text("Beta topic")

    # Edited in the second tab, the first (opened on the same conversation) drops the old words.
    page.goto(alpha)
    expect(page.locator("#turn-live")).to_have_attribute("data-live", "1")
    other.bring_to_front()
    edit = other.locator(".message-user").last.locator(".edit-message")
    edit.locator("summary").focus()
    other.keyboard.press("Enter")
    edit.locator("textarea").focus()
    other.keyboard.press("Control+A")
    other.keyboard.type("Alpha, said better")
    other.keyboard.press("Tab")
    other.keyboard.press("Enter")
    expect(page.locator(".message-user")).to_have_count(1)
    expect(page.locator(".message-user")).to_contain_text("Alpha, said better")
    expect(page.locator("#messages")).not_to_contain_text("Alpha topic")
    other.close()
