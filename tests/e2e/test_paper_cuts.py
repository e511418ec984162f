"""The third walkthrough's paper cuts, each in Chromium: the tokens page, chat details, the compaction
divider, temporary chats. (The README demo, History and memory search: test_demo_walk.py; the admin:
test_admin_accessibility.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import PASSWORD, manage, sign_up

pytestmark = pytest.mark.browser

LONG_NAME = "a-token-for-the-nightly-backup-script-that-runs-on-the-server-in-the-basement-" + "x" * 20


def fits(page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    box = page.locator(".token-list tbody tr").first.get_by_role("link", name=re.compile("Revoke")).bounding_box()
    assert box is not None and box["x"] + box["width"] <= width, box


def test_tokens_page_in_the_app_layout_copy_confirmed_revoke_and_long_names(page: Any, live_server_url: str) -> None:
    base = live_server_url
    sign_up(page, base, "tokens-user")
    page.click(".user-menu summary")
    page.get_by_role("link", name="Settings → API tokens").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("API tokens")
    expect(page.locator("#sidebar")).to_be_attached()  # the app's layout: the conversation list
    expect(page.locator("header.chat-header")).to_be_visible()
    audit(page, "tokens page, empty")

    page.fill("#id_name", LONG_NAME)
    page.select_option("#id_expires_in", "30")
    page.get_by_role("button", name="Create token").click()
    copy = page.locator("button[data-copy='#new-token']")
    expect(copy).to_have_accessible_name("Copy")
    expect(copy).to_be_focused()
    token = page.locator("#new-token").inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.keyboard.press("Enter")
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == token
    audit(page, "tokens page with a new token")
    fits(page, 1280)
    fits(page, 390)
    page.set_viewport_size({"width": 1280, "height": 800})

    row = page.locator(".token-list tbody tr").first
    row.get_by_role("link", name=re.compile("Revoke")).click()
    expect(page.locator(".token-confirm")).to_contain_text(
        f"Revoke “{LONG_NAME}”? Scripts using it stop working at once."
    )
    expect(page.get_by_role("button", name="Revoke")).to_be_focused()
    audit(page, "tokens page, confirming a revoke")
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator(".token-confirm")).to_have_count(0)
    assert page.request.get(f"{base}/api/me", headers={"Authorization": f"Bearer {token}"}).status == 200
    row.get_by_role("link", name=re.compile("Revoke")).click()
    page.get_by_role("button", name="Revoke").click()
    expect(page.locator(".notices")).to_contain_text("Revoked the token")
    assert page.request.get(f"{base}/api/me", headers={"Authorization": f"Bearer {token}"}).status == 401


def open_conversation(page: Any, base: str, user: str, first: str) -> str:
    sign_up(page, base, user)
    page.fill("#start-input", first)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", re.compile("complete|error"))
    return str(page.url)


def test_code_copy_button_sits_above_the_code_and_the_composer_ring_is_2px(page: Any, live_server_url: str) -> None:
    open_conversation(page, live_server_url, "code-reader", "Show me a wide code sample")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        button = page.locator(".code-block > .copy-btn").bounding_box()
        code = page.locator(".code-block > pre").bounding_box()
        assert button and code and button["y"] + button["height"] <= code["y"] + 0.5, (width, button, code)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.focus("#composer-input")
    ring = page.evaluate("(() => { const s = getComputedStyle(document.querySelector('#composer')); "
                         "return [s.outlineStyle, s.outlineWidth]; })()")  # fmt: skip
    assert ring == ["solid", "2px"]


def test_a_second_tab_says_why_it_cannot_send_while_another_writes(page: Any, live_server_url: str) -> None:
    url = open_conversation(page, live_server_url, "two-tabs", "Hello")
    other = page.context.new_page()
    other.goto(url)
    expect(other.locator(".chat.is-connected")).to_have_count(1)
    busy = other.locator(".composer-busy")
    expect(busy).to_be_hidden()
    page.fill("#composer-input", "Give me a long answer")
    page.keyboard.press("Enter")
    expect(busy).to_be_visible()
    expect(busy).to_have_text("Memora is writing a reply. You can send your next message when it is done, or stop it.")
    expect(other.locator("#composer .send-btn")).to_be_disabled()
    audit(other, "a second tab while another tab's reply is written")
    expect(other.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(busy).to_be_hidden()
    other.close()


def test_a_provider_error_is_a_plain_sentence_with_the_providers_words_behind_details(
    page: Any, live_server_url: str
) -> None:
    open_conversation(page, live_server_url, "provider-trouble", "Provider trouble, please")
    error = page.locator(".message-error")
    expect(error.locator("p").first).to_have_text(
        "The model provider had a problem on its side. Try again in a moment."
    )
    words = error.locator(".error-details > p")
    expect(words).to_be_hidden()
    error.get_by_text("Details").click()
    expect(words).to_have_text("HTTP 503: upstream overloaded: shard 7 queue depth 981")
    announced = page.locator("#reply-announcer")
    expect(announced).to_have_text(
        "The reply failed. The model provider had a problem on its side. Try again in a moment."
    )
    assert "  " not in announced.text_content()
    audit(page, "a failed reply, its details open")


EVERYTHING_SUMMARIZED = f"""
from accounts.models import User
from chat.turn.cut import summary_item
from chat.models import AgentState, Conversation, Message
owner = User.objects.create_user("summarized", password={PASSWORD!r})
conversation = Conversation.objects.create(owner=owner, title="All summarized")
for i in range(2):
    said = Message.objects.create(conversation=conversation, user=owner, role="user", content=f"Question {{i}}")
    Message.objects.create(conversation=conversation, user=owner, role="assistant", content=f"Answer {{i}}")
AgentState.objects.create(conversation=conversation, context=[summary_item("The user asked two questions.")],
                          compactions=1, summarized_through=said)
print(conversation.pk)
"""


def test_the_divider_shows_when_every_earlier_message_is_summarized(
    page: Any, live_server_url: str, live_server_env: dict[str, str]
) -> None:
    manage(live_server_env, "shell", "-c", EVERYTHING_SUMMARIZED)
    page.goto(f"{live_server_url}/accounts/login/")
    page.fill("#id_username", "summarized")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.get_by_role("link", name="All summarized").click()
    divider = page.locator(".summary-divider")
    expect(divider).to_have_count(1)
    expect(divider).to_contain_text("Earlier messages were summarized for the assistant")
    # After the last summarized message: everything above it is summarized.
    assert page.evaluate("document.querySelector('#messages').lastElementChild.id") == "summary-divider"


NOTE = (
    "Once you leave it, it is no longer in your conversation list or search; its transcript stays at its address, "
    "for you only, until you delete it or 24 hours after its last message, when it is deleted."
)


def test_a_temporary_chat_says_what_leaving_means_and_the_sweep_deletes_it_a_day_later(
    page: Any, live_server_url: str, live_server_env: dict[str, str]
) -> None:
    base = live_server_url
    sign_up(page, base, "temporary-user")
    # One short line beside the checkbox; what leaving it means is behind "More about temporary chats".
    note = page.locator("#start-temporary-note")
    expect(note).to_have_text("— nothing is remembered; deleted 24 hours after its last message")
    line = page.locator(".start-temporary .checkbox")
    height = page.evaluate("e => e.getBoundingClientRect().height", line.element_handle())
    assert height < 1.8 * float(page.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)", note.element_handle()))
    expect(page.locator("#start-temporary-details")).not_to_be_visible()
    page.get_by_text("More about temporary chats").click()
    expect(page.locator("#start-temporary-details")).to_contain_text(NOTE)
    audit(page, "start page, temporary chat explained")
    page.check("#start-temporary")
    page.fill("#start-input", "A temporary question")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete")
    url = page.url
    expect(page.locator("#composer-hint")).to_contain_text("deleted 24 hours after its last message")
    expect(page.locator("#conversation-list")).to_contain_text("A temporary question")  # listed while open
    page.goto(f"{base}/")
    expect(page.locator("#conversation-list")).not_to_contain_text("A temporary question")  # left: not listed
    page.goto(url)
    expect(page.locator(".message-user")).to_contain_text("A temporary question")  # the transcript is kept
    conversation_id = url.rstrip("/").rsplit("/", 1)[1]
    manage(live_server_env, "shell", "-c", (
        "from datetime import timedelta; from django.utils import timezone; from chat.models import Message; "
        "from chat.tasks import sweep_temporary_conversations_task as sweep; "
        f"Message.objects.filter(conversation_id='{conversation_id}')"
        ".update(created_at=timezone.now() - timedelta(hours=25)); assert sweep() >= 1"
    ))  # fmt: skip
    assert page.goto(url).status == 404
