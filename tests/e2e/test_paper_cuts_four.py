"""The fourth walkthrough's paper cuts, each in Chromium, in English and Chinese: htmx form errors in
place beside their field, search results and opening one, dates in the browser's time zone, the memory
summary after Pin, input-method Enter, a provider's words behind 详情, a restored wording listed once,
focus after a refused deletion, suggestions with their source, the README's Chinese walkthrough. (The
start page's temporary-chat line also in test_paper_cuts.py; the admin's extraction runs: test_admin_browser.py.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import manage, sign_up

pytestmark = pytest.mark.browser


def add_memory(page: Any, base: str, text: str) -> Any:
    page.goto(f"{base}/settings/memory/")
    page.fill("#memory-add-input", text)
    page.locator("#memory-add-input").press("Control+Enter")
    row = page.locator("#memory-list > .memory-row", has_text=text)
    expect(row).to_have_count(1)
    return row


@pytest.mark.parametrize(
    ("lang", "error"), [("en", "The end date must be in the future."), ("zh", "结束日期必须晚于现在。")]
)
def test_a_past_end_date_is_refused_beside_the_field_and_the_page_stays(
    reader: Any, live_server_url: str, lang: str, error: str
) -> None:
    page = reader(lang)
    sign_up(page, live_server_url, f"end-date-{lang}")
    row = add_memory(page, live_server_url, "Is in Lisbon for work")
    row.locator(".memory-expiry summary").click()
    field = row.locator("input[name=expires_at]")
    field.fill("2020-01-01T09:00")
    field.press("Enter")
    row = page.locator("#memory-list > .memory-row", has_text="Is in Lisbon for work")
    message = row.locator(".field-errors")
    expect(message).to_have_text(error)
    field = row.locator("input[name=expires_at]")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_attribute("aria-describedby", re.compile(message.get_attribute("id") or "-"))
    expect(field).to_be_focused()
    expect(page.get_by_role("heading", level=1)).to_be_visible()  # the page stayed
    expect(page.locator("#memory-add-input")).to_be_visible()
    audit(page, f"an end date refused in place ({lang})")


def error_beside(field: Any, message: Any) -> None:
    """The refused value's message is shown and tied to its field (aria-invalid, aria-describedby)."""
    expect(message).to_be_visible()
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_attribute("aria-describedby", re.compile(rf"\b{message.get_attribute('id')}\b"))


@pytest.mark.parametrize(
    ("lang", "empty_title", "duplicate"),
    [
        ("en", "A title cannot be empty", "An active memory already says exactly this."),
        ("zh", "标题不能为空", "已有一条生效中的记忆内容与此完全相同。"),
    ],
)
def test_refused_htmx_forms_answer_in_place_and_the_page_stays(
    reader: Any, live_server_url: str, lang: str, empty_title: str, duplicate: str
) -> None:
    """Every htmx form's refusal on Settings → Memory and the conversation page: add, edit, restore, rename."""
    page = reader(lang)
    base = live_server_url
    sign_up(page, base, f"refused-{lang}")
    heading = page.get_by_role("heading", level=1)

    # Add: too long (the form answers with its error, beside the field).
    row = add_memory(page, base, "Likes tea")
    page.fill("#memory-add-input", "x" * 501)
    page.locator("#memory-add button[type=submit]").click()
    error_beside(page.locator("#memory-add-input"), page.locator("#memory-add .field-errors"))
    expect(heading).to_be_visible()
    expect(page.locator("#memory-list > .memory-row")).to_have_count(1)
    page.fill("#memory-add-input", "")

    # Edit: too long, beside the row's field; the rest of the page is untouched.
    row.locator("form[action$='/edit/'] button").click()
    page.locator(".memory-edit-form textarea").fill("y" * 501)
    page.locator(".memory-edit-form button[type=submit]").first.click()
    editing = page.locator(".memory-row.is-editing")
    error_beside(editing.locator("textarea"), editing.locator(".field-errors"))
    expect(heading).to_be_visible()
    expect(page.locator("#memory-add-input")).to_be_visible()
    editing.locator("textarea").fill("Likes green tea")
    page.locator(".memory-edit-form button[type=submit]").first.click()
    expect(page.locator("#memory-list > .memory-row", has_text="Likes green tea")).to_have_count(1)

    # Restore: a conflict (the same wording is active again) is said on the page's status line.
    page.fill("#memory-add-input", "Likes tea")
    page.locator("#memory-add button[type=submit]").click()
    expect(page.locator("#memory-list > .memory-row")).to_have_count(2)
    old = page.locator("#memory-history .history-row").filter(
        has=page.locator(".memory-content", has_text=re.compile("^Likes tea$"))
    )
    old.locator("form[action$='/restore/'] button").click()
    expect(page.locator("#memory-status")).to_have_text(duplicate)
    expect(heading).to_be_visible()
    expect(page.locator("#memory-list > .memory-row")).to_have_count(2)
    audit(page, f"refused writes on Settings → Memory ({lang})")

    # Rename a conversation to nothing: the title's form says why, in the header.
    page.goto(f"{base}/")
    page.fill("#start-input", "A question about tea")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete")
    page.locator("#conversation-title .menu summary").click()
    page.locator("#conversation-title .menu-items a").first.click()  # Rename
    page.fill("#rename-title", "   ")
    page.keyboard.press("Enter")
    error_beside(page.locator("#rename-title"), page.locator("#rename-errors"))
    expect(page.locator("#rename-errors")).to_contain_text(empty_title)
    expect(page.locator(".message-user")).to_contain_text("A question about tea")  # the page stayed
    expect(page.locator("#composer-input")).to_be_visible()


@pytest.mark.parametrize(
    ("lang", "line", "more"),
    [
        ("en", "— nothing is remembered; deleted 24 hours after its last message", "More about temporary chats"),
        ("zh", "— 不会记住任何内容；最后一条消息 24 小时后删除", "关于临时对话"),
    ],
)
def test_the_start_pages_temporary_chat_line_is_short_with_the_rest_behind_a_link(
    reader: Any, live_server_url: str, lang: str, line: str, more: str
) -> None:
    page = reader(lang)
    sign_up(page, live_server_url, f"temporary-line-{lang}")
    note = page.locator("#start-temporary-note")
    expect(note).to_have_text(line)
    height = page.evaluate(
        "e => e.getBoundingClientRect().height", page.locator(".start-temporary .checkbox").element_handle()
    )
    assert height < 1.8 * float(page.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)", note.element_handle()))
    details = page.locator("#start-temporary-details")
    expect(details).to_be_hidden()
    page.get_by_text(more).click()
    expect(details).to_be_visible()
    audit(page, f"the start page's temporary chat line ({lang})")


LONG_TITLE = "Planting tulip bulbs in a small balcony garden before the first frost of a very cold winter"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_search_results_show_the_whole_title_who_spoke_and_no_demo_framing_and_open_in_the_transcript(
    reader: Any, live_server_url: str, lang: str
) -> None:
    page = reader(lang)
    base = live_server_url
    sign_up(page, base, f"searcher-{lang}")
    page.fill("#start-input", "When should I plant tulip bulbs?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete")
    for i in range(12):  # a transcript long enough to scroll
        page.fill("#composer-input", f"Filler message {i} about gardens")
        page.keyboard.press("Enter")
        expect(page.locator(".message-assistant")).to_have_count(i + 2)
        expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete")
    conversation = page.url.rstrip("/").rsplit("/", 1)[1]
    page.request.patch(
        f"{base}/api/conversations/{conversation}",
        data={"title": LONG_TITLE},
        headers={"X-CSRFToken": next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")},
    )
    page.goto(f"{base}/search/?q=tulip")
    hits = page.locator(".search-page .search-hit")
    expect(hits).to_have_count(3)  # the title, the question, the reply
    title = hits.first.locator(".search-hit-title")
    expect(title).to_have_text(LONG_TITLE)
    assert page.evaluate("e => e.scrollWidth <= e.clientWidth", title.element_handle())  # wrapped, not cut
    you, memora = ("你", "Memora") if lang == "zh" else ("You", "Memora")
    expect(page.locator(".search-hit-who", has_text=you)).to_have_count(1)
    expect(page.locator(".search-hit-who", has_text=memora)).to_have_count(1)
    expect(page.locator(".search-page")).not_to_contain_text("Offline demo model")
    expect(page.locator(".search-page")).not_to_contain_text("OPENAI_API_KEY")
    audit(page, f"search results ({lang})")

    # Opening a hit scrolls the transcript only: the page itself stays put, the header in view.
    hits.nth(1).locator("a").click()
    expect(page.locator(".message:target")).to_be_in_viewport()
    assert page.evaluate("document.scrollingElement.scrollTop") == 0
    expect(page.locator("header.chat-header")).to_be_in_viewport()


@pytest.mark.parametrize(
    ("lang", "timezone", "shown"),
    [("zh", "Asia/Shanghai", "2030年12月6日 17:30"), ("en", "America/New_York", "6 Dec 2030, 04:30")],
)
def test_end_dates_show_and_are_set_in_the_browsers_time_zone_the_pages_way(
    reader: Any, live_server_url: str, lang: str, timezone: str, shown: str
) -> None:
    page = reader(lang, timezone_id=timezone)
    sign_up(page, live_server_url, f"local-time-{lang}")
    row = add_memory(page, live_server_url, "Is in Lisbon for work")
    row.locator(".memory-expiry summary").click()
    field = row.locator("input[name=expires_at]")
    expect(row.locator(f"label[for='{field.get_attribute('id')}']")).not_to_contain_text("UTC")
    local = "2030-12-06T17:30" if lang == "zh" else "2030-12-06T04:30"  # both 09:30 UTC
    field.fill(local)
    field.press("Enter")
    row = page.locator("#memory-list > .memory-row", has_text="Is in Lisbon for work")
    expect(row.locator(".badge-expiry time")).to_have_text(shown)
    expect(row.locator(".badge-expiry time")).to_have_attribute("datetime", "2030-12-06T09:30:00+00:00")
    page.reload()
    row = page.locator("#memory-list > .memory-row", has_text="Is in Lisbon for work")
    expect(row.locator(".badge-expiry time")).to_have_text(shown)
    expect(row.locator("input[name=expires_at]")).to_have_value(local)  # the field in local time too


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_settings_memory_summary_follows_pin_and_composition_enter_adds_nothing(
    reader: Any, live_server_url: str, lang: str
) -> None:
    page = reader(lang)
    sign_up(page, live_server_url, f"pinner-{lang}")
    row = add_memory(page, live_server_url, "Has a cat called Miso")
    every_chat = page.locator("#memory-summary .budget-text strong").first
    expect(every_chat).to_have_text("0")
    row.locator("form[action$='/pin/'] button").click()
    expect(every_chat).to_have_text("1")  # the summary follows the pin without a reload
    page.locator("#memory-list > .memory-row", has_text="Miso").locator("form[action$='/pin/'] button").click()
    expect(every_chat).to_have_text("0")

    # Ctrl+Enter that confirms an input method's characters is not "add".
    page.fill("#memory-add-input", "喜欢猫")
    page.locator("#memory-add-input").evaluate(
        "el => el.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', ctrlKey: true, isComposing: true,"
        " keyCode: 229, bubbles: true, cancelable: true}))"
    )
    page.wait_for_timeout(500)
    expect(page.locator("#memory-list > .memory-row", has_text="喜欢猫")).to_have_count(0)
    expect(page.locator("#memory-add-input")).to_have_value("喜欢猫")


def test_a_provider_error_in_chinese_keeps_the_providers_words_behind_details(
    reader: Any, live_server_url: str
) -> None:
    page = reader("zh")
    sign_up(page, live_server_url, "provider-trouble-zh")
    page.fill("#start-input", "Provider trouble, please")
    page.keyboard.press("Enter")
    error = page.locator(".message-error")
    expect(error.locator("p").first).to_have_text("模型服务自身出了问题。请稍后再试。")
    words = error.locator(".error-details > p")
    expect(words).to_be_hidden()
    error.get_by_text("详情").click()
    expect(words).to_have_text("HTTP 503: upstream overloaded: shard 7 queue depth 981")
    page.reload()  # saved in Chinese, read again
    expect(page.locator(".message-error p").first).to_have_text("模型服务自身出了问题。请稍后再试。")
    audit(page, "a failed reply in Chinese")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_restored_wording_is_listed_once_in_the_list_and_history(
    reader: Any, live_server_url: str, lang: str
) -> None:
    page = reader(lang)
    sign_up(page, live_server_url, f"restorer-{lang}")
    one, two = "Has a cat called Miso", "Has two cats, Miso and Tofu"
    row = add_memory(page, live_server_url, one)
    row.locator("form[action$='/edit/'] button").click()
    page.locator(".memory-edit-form textarea").fill(two)
    page.locator(".memory-edit-form button[type=submit]").first.click()
    expect(page.locator("#memory-list > .memory-row", has_text=two)).to_have_count(1)

    def listed(text: str) -> Any:
        return page.locator(".memory-content").filter(has_text=re.compile(f"^{re.escape(text)}$"))

    def restore(text: str) -> None:
        row = page.locator("#memory-history .history-row", has=listed(text))
        row.locator("form[action$='/restore/'] button").click()
        expect(page.locator("#memory-list > .memory-row", has=listed(text))).to_have_count(1)

    restore(one)  # the earlier wording, back in use
    for reload in (False, True):  # live, then as loaded
        if reload:
            page.reload()
        expect(listed(one)).to_have_count(1)  # in the list, not also in History
        expect(page.locator("#memory-history .history-row", has=listed(one))).to_have_count(0)
        replaced = page.locator("#memory-history .history-row", has=listed(two))
        expect(replaced).to_have_count(1)
        expect(replaced.locator(".replaced-by a")).to_have_text(f"“{one}”")  # what replaced it, once
    audit(page, f"History after a restore ({lang})")

    restore(two)  # back and forth: each wording is still on the page once
    restore(one)
    page.reload()
    expect(listed(one)).to_have_count(1)
    expect(listed(two)).to_have_count(1)
    expect(page.locator("#memory-history .history-row")).to_have_count(1)


@pytest.mark.parametrize(("lang", "wrong"), [("en", "The password is not correct"), ("zh", "密码不正确")])
def test_a_failed_account_deletion_puts_focus_on_the_field_with_its_message(
    reader: Any, live_server_url: str, lang: str, wrong: str
) -> None:
    page = reader(lang)
    sign_up(page, live_server_url, f"keeper-{lang}")
    page.goto(f"{live_server_url}/settings/account/")
    page.fill("#id_password", "not-my-password")
    page.locator(".account-delete-form button[type=submit]").click()
    expect(page.locator(".account-delete-form .field-errors")).to_contain_text(wrong)
    expect(page.locator("#id_password")).to_be_focused()
    audit(page, f"a refused account deletion ({lang})")


@pytest.mark.parametrize(
    ("lang", "when"), [("en", re.compile(r"\d+ \w{3} 20\d\d, \d\d:\d\d")), ("zh", re.compile(r"20\d\d年\d+月\d+日"))]
)
def test_a_suggestion_shows_the_message_it_came_from_and_when_before_keep_or_discard(
    reader: Any, live_server_url: str, live_server_env: dict[str, str], lang: str, when: Any
) -> None:
    page = reader(lang)
    username = f"suggested-{lang}"
    sign_up(page, live_server_url, username)
    page.fill("#start-input", "I have a cat called Miso")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete")
    manage(live_server_env, "shell", "-c", (
        "from accounts.models import User; from chat.models import Message; from memory.models import Memory; "
        f"user = User.objects.get(username={username!r}); "
        "said = Message.objects.get(conversation__owner=user, role='user'); "
        "m = Memory.objects.create(owner=user, content='Has a cat called Miso', suggested=True, origin='extracted'); "
        "m.sources.add(said)"
    ))  # fmt: skip
    page.goto(f"{live_server_url}/settings/memory/")
    row = page.locator(".suggestion-row", has_text="Has a cat called Miso")
    expect(row.locator(".source-link")).to_have_text("“I have a cat called Miso”")
    expect(row.locator(".source-when time")).to_have_text(when)
    audit(page, f"a suggestion with its source ({lang})")


def test_the_readme_chinese_walkthrough_names_the_page_with_the_interface_language(
    reader: Any, live_server_url: str
) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    walkthrough = readme.split("### 中文演示", 1)[1].split("\n## ", 1)[0]
    menu_entry = re.search(r"\*\*(设置 → [^*]+)\*\* 页的“界面语言”", walkthrough)
    assert menu_entry, "the walkthrough says where the interface language is chosen"
    page = reader("zh")
    sign_up(page, live_server_url, "readme-zh")
    page.click(".user-menu summary")
    page.get_by_role("link", name=menu_entry[1]).click()
    expect(page.get_by_label("界面语言")).to_be_visible()
