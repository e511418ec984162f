"""The fourth walkthrough's remaining paper cuts, in Chromium, in English and Chinese: conversation markers
in the reader's language (live and after a reload: one change, several, a forgotten memory); focus after
Review, Apply, Wrong and Outdated, and Wrong asking in the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo_server_url(demo_web_url: str) -> str:
    """The offline demo model; asked to remember, it flushes memory in the web process."""
    return demo_web_url


@pytest.mark.parametrize(
    ("lang", "lead", "review"), [("en", "Memory updated · ", "Review"), ("zh", "记忆已更新 · ", "查看")]
)
def test_a_memory_marker_speaks_the_readers_language_live_and_after_a_reload(
    reader: Any, demo_server_url: str, lang: str, lead: str, review: str
) -> None:
    # No language setting: the reader's browser decides, so a marker stored for the worker's default
    # language would show English to a Chinese reader.
    page = reader(lang, timeout=20_000)
    sign_up(page, demo_server_url, f"marker-reader-{lang}")
    page.fill("#start-input", "Remember that I'm vegetarian.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    marker = page.locator(".conversation-marker.marker-memory")
    expect(marker).to_have_count(1)
    expect(marker).to_contain_text(lead + "Is vegetarian")
    expect(marker.get_by_role("link", name=review)).to_be_visible()
    page.reload()
    marker = page.locator(".conversation-marker.marker-memory")
    expect(marker).to_contain_text(lead + "Is vegetarian")
    expect(marker.get_by_role("link", name=review)).to_be_visible()
    audit(page, f"a memory marker in the reader's language ({lang})")


def add_memory(page: Any, base: str, text: str) -> Any:
    page.goto(f"{base}/settings/memory/")
    page.fill("#memory-add-input", text)
    page.locator("#memory-add-input").press("Control+Enter")
    row = page.locator("#memory-list > .memory-row", has_text=text)
    expect(row).to_have_count(1)
    return row


@pytest.mark.parametrize(
    ("lang", "wrong", "delete", "outdated", "apply"),
    [("en", "Wrong", "Delete", "Outdated", "Apply"), ("zh", "有误", "删除", "已过时", "应用")],
)
def test_focus_follows_wrong_outdated_review_and_apply_and_wrong_confirms_in_the_page(
    reader: Any, live_server_url: str, lang: str, wrong: str, delete: str, outdated: str, apply: str
) -> None:
    page = reader(lang)
    base = live_server_url
    sign_up(page, base, f"focus-{lang}")
    first = add_memory(page, base, "Is allergic to peanuts").get_attribute("id")
    second = add_memory(page, base, "Likes peanut-free cereal bars").get_attribute("id")

    # Review naming several memories: focus on the first highlighted one, and it stays there once the
    # browser has handled the fragment.
    ids = f"{first},{second}".replace("memory-", "")
    page.goto(f"{base}/settings/memory/?review={ids}#{first}")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    expect(page.locator(f"#{first} [data-row-focus]")).to_be_focused()

    # Apply: focus stays on the setting just saved, not on some memory.
    page.locator("#memory-review input[type=radio]").last.check()
    page.locator("#memory-review").get_by_role("button", name=apply).click()
    expect(page.locator("#memory-status")).not_to_be_empty()
    expect(page.locator("#memory-review").get_by_role("button", name=apply)).to_be_focused()

    page.goto(f"{base}/")
    page.fill("#start-input", "Is peanut butter a good snack?")
    page.keyboard.press("Enter")
    reply = page.locator(".message-assistant").first
    expect(reply).to_have_attribute("data-status", "complete", timeout=20_000)
    used = reply.locator("details.reply-memories")
    used.locator("summary").click()
    dialogs: list[str] = []

    def refuse(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", refuse)
    items = used.locator(".reply-memory")
    # Wrong asks in the page, focus on the question's safe choice; Delete then focuses the outcome.
    items.first.get_by_role("button", name=wrong).click()
    confirm = items.first.locator(".reply-memory-confirm")
    expect(confirm).to_be_visible()
    audit(page, f"Wrong asks in the page ({lang})")
    confirm.get_by_role("button", name=delete).click()
    expect(items.first.locator(".reply-memory-outcome")).to_be_focused()
    assert dialogs == []
    # Outdated: focus on its outcome.
    items.nth(1).get_by_role("button", name=outdated).click()
    expect(items.nth(1).locator(".reply-memory-outcome")).to_be_focused()
    audit(page, f"focus after Wrong and Outdated ({lang})")


@pytest.mark.parametrize(
    ("lang", "keep", "lead"), [("en", "Keep", "Memory updated · "), ("zh", "保留", "记忆已更新 · ")]
)
def test_the_marker_of_a_suggestion_says_it_was_remembered_after_keep(
    reader: Any, demo_server_url: str, lang: str, keep: str, lead: str
) -> None:
    page = reader(lang, timeout=20_000)
    sign_up(page, demo_server_url, f"keeper-marker-{lang}")
    page.fill("#start-input", "I'm diabetic now.")  # sensitive: waits as a suggestion
    page.keyboard.press("Enter")
    marker = page.locator(".conversation-marker.marker-memory")
    expect(marker).to_contain_text("“Is diabetic”")
    expect(marker).not_to_contain_text(lead)
    page.locator(".notice-memory").last.get_by_role("button", name=keep).click()
    expect(marker).to_contain_text(lead + "Is diabetic")
    audit(page, f"a kept suggestion's marker ({lang})")
    page.reload()
    expect(page.locator(".conversation-marker.marker-memory")).to_contain_text(lead + "Is diabetic")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_a_phone_the_memories_come_before_the_settings(reader: Any, live_server_url: str, lang: str) -> None:
    page = reader(lang, viewport={"width": 390, "height": 800})
    sign_up(page, live_server_url, f"phone-{lang}")
    row = add_memory(page, live_server_url, "Prefers aisle seats")
    page.reload()
    top = (row.bounding_box() or {})["y"]
    for setting in ("#memory-review", "#memory-tidy"):
        assert top < (page.locator(setting).bounding_box() or {})["y"], setting
    audit(page, f"Settings → Memory on a phone ({lang})")


@pytest.mark.parametrize(
    ("lang", "more", "forgot"),
    [("en", " (and 1 more)", "Forgot “Is vegetarian”"), ("zh", "（另有 1 条）", "已忘记“Is vegetarian”")],
)
def test_a_marker_of_several_changes_and_of_a_forgotten_memory_speaks_the_readers_language(
    reader: Any, demo_server_url: str, lang: str, more: str, forgot: str
) -> None:
    """ "… (and 1 more)" and "Forgot …" in the reader's language, live and after a reload."""
    page = reader(lang, timeout=20_000)
    sign_up(page, demo_server_url, f"several-{lang}")
    page.fill(
        "#start-input", "Remember that I'm vegetarian. Remember that I'm left-handed. Remember that I'm colour-blind."
    )
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete", timeout=20_000)
    markers = page.locator(".conversation-marker.marker-memory")
    expect(markers).to_have_count(1, timeout=20_000)
    page.fill("#composer-input", "Please forget that I'm vegetarian.")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant")).to_have_count(2)
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(markers).to_have_count(2, timeout=20_000)
    for reload in (False, True):
        if reload:
            page.reload()
        expect(markers.first).to_contain_text(more)
        expect(markers.last).to_contain_text(forgot)
        if lang == "zh":
            for marker in markers.all():
                expect(marker).not_to_contain_text(re.compile(r"Memory updated|and \d+ more|Forgot|Review"))
    audit(page, f"markers of several changes and of a forgotten memory ({lang})")
