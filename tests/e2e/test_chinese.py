"""The interface in Simplified Chinese (SPEC §8, "Languages"), in Chromium with locale zh-CN.

Every visible string and every label a screen reader reads (aria-label, title, placeholder) must be
Chinese: `english_left` lists any English word still on the page, outside what the user wrote (their
messages, memories, titles, names), and the tests fail on one. The same pages in an English browser
stay English, a user's own setting wins over the browser after login, Enter while an input method is
composing never sends, and axe finds nothing serious at phone width (390 px).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.axe import FAILING_IMPACTS, PHONE, run_axe, settle
from tests.e2e.browser import PASSWORD

pytestmark = pytest.mark.browser

# Words that stay as they are in Chinese: the product's name, key names, and technical names.
ALLOWED_WORDS = {"Memora", "AI", "API", "JSON", "Markdown", "Enter", "Shift", "Esc", "Python", "MCP", "OpenAI"}
# What the user wrote, or data: never interface text.
USER_CONTENT = ", ".join([
    "script", "style", "noscript", "code", "pre", "textarea", "option", "[lang]:not(html)", ".message-text",
    ".memory-content", ".chat-header .title", ".conversation-title", ".user-name", ".avatar", ".source-link",
    ".replaced-by a", ".replaces", ".model-badge:not(.is-demo)", "#new-token", ".token-list td:first-child",
    "#reply-announcer",  # the reply's own text, after a prefix checked on its own
    ".search-hit-title", ".search-excerpt-text",  # a search hit's conversation title and excerpt
    ".client-name",  # a connected tool's name (its MCP clientInfo or User-Agent) or a token's name
    "#model-status",  # "Replies now come from <model id>.", its wording checked on its own
])  # fmt: skip

ENGLISH_LEFT = """
([skip, allowed]) => {
  const words = new Set();
  const visible = (el) => el.checkVisibility ? el.checkVisibility() : el.offsetParent !== null;
  const note = (text) => (text.match(/[A-Za-z]{2,}/g) || []).forEach((w) => {
    if (!allowed.includes(w)) words.add(w);
  });
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest(skip)) continue;
    // A visually-hidden label is read aloud: it counts although it has no size.
    if (!visible(el) && !el.closest(".visually-hidden")) continue;
    note(node.textContent);
  }
  document.querySelectorAll("[aria-label], [title], [placeholder], [alt]").forEach((el) => {
    if (el.closest(skip) && !el.matches("textarea")) return;
    ["aria-label", "title", "placeholder", "alt"].forEach((a) => { if (el.hasAttribute(a)) note(el.getAttribute(a)); });
  });
  const own = document.querySelector(".chat-header .title");  // a conversation's title: the user's words
  note(own ? document.title.replace(own.textContent, "") : document.title);
  return Array.from(words).sort();
}
"""


def english_left(page: Any) -> list[str]:
    return page.evaluate(ENGLISH_LEFT, [USER_CONTENT, sorted(ALLOWED_WORDS)])


def assert_chinese(page: Any, state: str) -> None:
    assert page.evaluate("document.documentElement.lang") == "zh-hans", state
    assert english_left(page) == [], f"English left on {state} ({page.url})"


def audit_phone(page: Any, state: str) -> None:
    """axe at 390 px: nothing serious or critical (lang attributes, names, nothing cut off)."""
    before = page.viewport_size
    page.set_viewport_size(PHONE)
    settle(page)
    try:
        failures = [str(v) for v in run_axe(page) if v.impact in FAILING_IMPACTS]
    finally:
        page.set_viewport_size(before)
    assert not failures, f"accessibility violations on {state} (Chinese, 390 px):\n" + "\n".join(failures)


@pytest.fixture
def zh_page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture(scope="module")
def demo_url(demo_stack_url: str) -> str:
    """The offline demo model with a worker: its fixed sentences and memory notices in Chinese."""
    return demo_stack_url


def sign_up(page: Any, base: str, username: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/accounts/signup/")
    assert_chinese(page, "sign-up page")
    audit_phone(page, "sign-up page")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.get_by_role("button", name="注册").click()
    expect(page).to_have_url(f"{base}/")
    page.wait_for_load_state("load")


def reply(page: Any, index: int) -> Any:
    return page.locator(".message-assistant").nth(index)


def test_login_and_sign_up_pages_are_chinese(zh_page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, live_server_url
    page.goto(f"{base}/accounts/login/")
    assert_chinese(page, "login page")
    expect(page.get_by_role("heading", name="登录")).to_be_visible()
    audit_phone(page, "login page")
    page.fill("#id_username", "nobody")
    page.fill("#id_password", "wrong-password")
    page.get_by_role("button", name="登录").click()
    assert_chinese(page, "login page with an error")
    sign_up(page, base, "小明")
    assert_chinese(page, "start page")
    expect(page.get_by_text("小明，你好！想聊点什么？")).to_be_visible()


def test_chat_streaming_stop_retry_and_temporary_are_chinese(zh_page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, live_server_url
    sign_up(page, base, "小红")
    audit_phone(page, "start page")

    # A reply streaming, then stopped: Stop, the note and the Retry button speak Chinese.
    page.fill("#start-input", "请写一段很长的内容 long")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0).locator(".streaming-text")).to_contain_text("word3")
    expect(page.get_by_role("button", name="停止回复")).to_be_visible()
    assert_chinese(page, "a reply streaming")
    page.click("#stop-btn")
    expect(reply(page, 0)).to_have_attribute("data-status", "interrupted")
    expect(reply(page, 0)).to_contain_text("已停止。")
    expect(page.locator("#reply-announcer")).to_contain_text("回复已停止。")
    assert_chinese(page, "a stopped reply")
    audit_phone(page, "a stopped reply")
    reply(page, 0).get_by_role("button", name="重新生成").click()
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(page.get_by_role("button", name="复制回复")).to_be_visible()
    assert_chinese(page, "a finished reply")

    page.click(".title-row summary")
    expect(page.get_by_role("link", name="重命名")).to_be_visible()
    assert_chinese(page, "the conversation menu")
    page.keyboard.press("Escape")

    # The temporary-chat toggle, and a temporary chat.
    page.goto(f"{base}/")
    expect(page.locator("label.checkbox")).to_contain_text("临时对话 — 不会记住任何内容；最后一条消息 24 小时后删除")
    page.check("#start-temporary")
    page.fill("#start-input", "你好")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(page.locator(".tag-temporary")).to_have_text("临时对话")
    expect(page.locator("#composer-hint")).to_contain_text("临时对话：这里的内容都不会被记住")
    assert_chinese(page, "a temporary chat")
    audit_phone(page, "a temporary chat")

    # The phone sidebar and user menu.
    page.set_viewport_size(PHONE)
    page.click(".sidebar-open")
    page.click(".user-menu summary")
    assert_chinese(page, "the phone sidebar with the user menu")
    page.set_viewport_size({"width": 1280, "height": 800})


def test_memory_notice_demo_and_settings_pages_are_chinese(zh_page: Any, demo_url: str, screenshots: Path) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, demo_url
    sign_up(page, base, "阿明")

    # The conversation keeps a lasting marker, written in the user's own language setting (a worker
    # has no browser to ask): this user chooses Chinese on Settings → Account first.
    page.goto(f"{base}/settings/account/")
    assert_chinese(page, "Settings → Account")
    page.select_option("#language-select", "zh-hans")
    page.get_by_role("button", name="保存").click()
    expect(page.locator(".notices")).to_contain_text("语言已保存。")
    assert_chinese(page, "Settings → Account after saving the language")
    audit_phone(page, "Settings → Account")
    page.goto(f"{base}/settings/tokens/")
    assert_chinese(page, "API tokens page")
    page.fill("#id_name", "笔记本脚本")
    page.get_by_role("button", name="创建令牌").click()
    expect(page.locator("#new-token")).to_be_visible()
    assert_chinese(page, "API tokens page with a new token")
    audit_phone(page, "API tokens page")

    # Seed 000: the small-phone preference, said in passing and then asked to be remembered.
    page.goto(f"{base}/")
    page.fill("#start-input", "请记住：我一直喜欢小手机，单手就能操作。")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(reply(page, 0)).to_contain_text("（离线演示模型——未配置 AI 服务。）你说：")
    expect(reply(page, 0)).to_contain_text("记忆已更新。已记住：偏好小手机。")
    notice = page.locator(".notice-memory").first
    expect(notice).to_contain_text("记忆已更新：", timeout=15_000)
    expect(notice.get_by_role("link", name="查看")).to_be_visible()
    expect(page.locator(".conversation-marker").first).to_contain_text("记忆已更新 · ")
    assert_chinese(page, "a conversation with a memory notice")
    audit_phone(page, "a conversation with a memory notice")
    page.fill("#composer-input", "今天帮朋友挑手机，他这次的预算是 3000。")
    page.keyboard.press("Enter")
    expect(reply(page, 1)).to_contain_text("我记得关于你的这些：", timeout=20_000)
    page.screenshot(path=str(screenshots / "chat-zh.png"))

    # Settings → Memory: add, edit, delete, history, search, export.
    page.goto(f"{base}/settings/memory/")
    expect(page.get_by_role("heading", name="生效中的记忆")).to_be_visible()
    assert_chinese(page, "Settings → Memory")
    page.fill("#memory-add-input", "偏好公制单位")
    page.get_by_role("button", name="添加记忆").click()
    row = page.locator("#memory-list > .memory-row", has_text="偏好公制单位")
    expect(row).to_contain_text("由你添加")
    row.get_by_role("button", name="编辑").click()
    page.fill(".memory-edit-form textarea", "偏好公制单位和摄氏度")
    page.locator(".memory-edit-form").get_by_role("button", name="保存").click()
    expect(page.locator("#memory-status")).to_contain_text("记忆已保存")
    assert_chinese(page, "Settings → Memory after an edit")
    page.locator(".memory-scroller").evaluate("el => el.scrollTo(0, 0)")
    page.screenshot(path=str(screenshots / "memory-zh.png"))
    row = page.locator("#memory-list > .memory-row", has_text="偏好公制单位和摄氏度")
    row.get_by_role("button", name="删除").click()
    expect(page.get_by_text("永久删除这条记忆？")).to_be_visible()
    assert_chinese(page, "a delete confirmation")
    page.locator(".memory-row.is-confirming").get_by_role("button", name="删除").click()
    expect(page.locator("#memory-history")).to_contain_text("历史记录")
    page.fill("#memory-search", "手机")
    expect(page.locator("#memory-list > .memory-row")).to_have_count(1)
    page.fill("#memory-search", "没有这个")
    expect(page.locator("#memory-empty")).to_contain_text("没有包含“没有这个”的生效中记忆。")
    assert_chinese(page, "a search with no result")
    page.fill("#memory-search", "")
    with page.expect_download() as download:
        page.get_by_role("button", name="导出").click()
    assert download.value.suggested_filename.endswith(".json")
    page.get_by_role("button", name="忘记全部").click()
    expect(page.get_by_role("button", name="取消")).to_be_visible()
    assert_chinese(page, "the forget-everything confirmation")
    page.get_by_role("button", name="取消").click()
    audit_phone(page, "Settings → Memory")


def test_suggestions_and_conversation_search_are_chinese(zh_page: Any, demo_url: str) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, demo_url
    sign_up(page, base, "小林")
    # The marker kept in the conversation is written in the user's own setting (memory.notices).
    page.goto(f"{base}/settings/account/")
    page.select_option("#language-select", "zh-hans")
    page.get_by_role("button", name="保存").click()
    expect(page.locator(".notices")).to_contain_text("语言已保存。")

    # Every learned fact waits for Keep or Discard: the suggestion in the conversation, in Chinese.
    page.goto(f"{base}/settings/memory/")
    page.get_by_label("记住任何学到的信息前都先问我").check()
    page.get_by_role("button", name="应用").click()
    expect(page.locator("#memory-status")).to_contain_text("已保存")
    assert_chinese(page, "Settings → Memory with every fact asked first")
    page.goto(f"{base}/")
    page.fill("#start-input", "我现在更喜欢小手机。")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    notice = page.locator(".notice-memory").last
    expect(notice).to_contain_text("Memora 想记住“", timeout=15_000)
    expect(page.locator(".conversation-marker").first).to_contain_text("Memora 想记住“")
    assert_chinese(page, "a suggestion in the conversation")
    notice.get_by_role("button", name="保留").click()
    expect(notice).to_contain_text("已保留：“")
    assert_chinese(page, "a kept suggestion")

    # Conversation search: the sidebar's results, then the search page.
    page.fill("#search-input", "手机")
    expect(page.locator("#search-results .search-hit").first).to_be_visible()
    assert_chinese(page, "sidebar search results")
    page.goto(f"{base}/search/?q=手机")
    expect(page.locator(".search-page .search-hit").first).to_be_visible()
    assert_chinese(page, "the search page")
    page.goto(f"{base}/search/?q=没有这个词")
    assert_chinese(page, "a search with no result")


def test_english_browser_stays_english_and_a_chinese_setting_wins_after_login(
    browser: Any, live_server_url: str
) -> None:
    from playwright.sync_api import expect

    base = live_server_url
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    page.goto(f"{base}/accounts/signup/")
    assert page.evaluate("document.documentElement.lang") == "en"
    expect(page.get_by_role("heading", name="Create your account")).to_be_visible()
    page.fill("#id_username", "小伟")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("button", name="Start the conversation")).to_be_visible()
    page.goto(f"{base}/settings/account/")
    page.select_option("#language-select", "zh-hans")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".notices")).to_contain_text("语言已保存。")
    page.get_by_role("link", name="返回对话").click()
    assert_chinese(page, "start page of a Chinese-setting user in an English browser")
    page.click(".user-menu summary")
    page.get_by_role("button", name="退出登录").click()
    expect(page.get_by_role("heading", name="You’re logged out")).to_be_visible()  # signed out: the browser's
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "小伟")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("button", name="开始对话")).to_be_visible()
    context.close()


def test_an_english_setting_wins_in_a_chinese_browser(zh_page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, live_server_url
    sign_up(page, base, "lena")
    page.goto(f"{base}/settings/account/")
    page.select_option("#language-select", "en")
    page.get_by_role("button", name="保存").click()
    expect(page.locator(".notices")).to_contain_text("Language saved.")
    page.goto(f"{base}/")
    assert page.evaluate("document.documentElement.lang") == "en"
    expect(page.get_by_role("button", name="Start the conversation")).to_be_visible()


def test_enter_while_an_input_method_composes_never_sends(zh_page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    page, base = zh_page, live_server_url
    sign_up(page, base, "输入法")
    page.fill("#start-input", "你好")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)

    composer = page.locator("#composer-input")
    composer.fill("xiao sh")
    # The Enter that picks a candidate of the input method: isComposing, and (older browsers) keyCode 229.
    page.evaluate(
        """() => {
            const input = document.getElementById("composer-input");
            const init = {key: "Enter", isComposing: true, bubbles: true, cancelable: true};
            input.dispatchEvent(new KeyboardEvent("keydown", init));
            const legacy = new KeyboardEvent("keydown", {key: "Enter", bubbles: true, cancelable: true});
            Object.defineProperty(legacy, "keyCode", {get: () => 229});
            input.dispatchEvent(legacy);
        }"""
    )
    # And a real composition, as an input method drives Chromium (DevTools protocol): Enter confirms it.
    cdp = page.context.new_cdp_session(page)
    composer.focus()
    cdp.send("Input.imeSetComposition", {"text": "小", "selectionStart": 1, "selectionEnd": 1})
    cdp.send(
        "Input.dispatchKeyEvent", {"type": "rawKeyDown", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 229}
    )
    cdp.send("Input.insertText", {"text": "小"})
    page.wait_for_timeout(500)
    expect(page.locator(".message-user")).to_have_count(1)
    expect(composer).to_have_value(re.compile(r"^xiao sh"))
    composer.fill("小手机")
    page.keyboard.press("Enter")  # the composition ended: this Enter sends, as always
    expect(page.locator(".message-user")).to_have_count(2)
    expect(composer).to_have_value("")


def test_the_demo_models_chinese_has_no_stray_particle_and_no_english_end_date(zh_page: Any, demo_url: str) -> None:
    """ "我现在更喜欢大屏手机了" is remembered as 偏好大屏手机 (not 偏好大屏手机了), everywhere it shows; a memory's
    end date in a Chinese reply is written the Chinese way, never "(until 2026-12-06)"."""
    from playwright.sync_api import expect

    page, base = zh_page, demo_url
    sign_up(page, base, "大屏手机用户")
    page.fill("#start-input", "请记住：我一直喜欢小屏手机，平时单手用着方便。")
    page.keyboard.press("Enter")
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    page.fill("#composer-input", "我现在更喜欢大屏手机了。")
    page.keyboard.press("Enter")
    expect(reply(page, 1)).to_have_attribute("data-status", "complete", timeout=20_000)
    expect(reply(page, 1)).to_contain_text("偏好大屏手机")
    expect(reply(page, 1)).not_to_contain_text("偏好大屏手机了")
    marker = page.locator(".conversation-marker.marker-memory").last
    expect(marker).to_contain_text("偏好大屏手机", timeout=15_000)
    expect(marker).not_to_contain_text("偏好大屏手机了")
    page.goto(f"{base}/settings/memory/")
    expect(page.locator("#memory-list > .memory-row .memory-content")).to_have_text(["偏好大屏手机"])

    # A time-bound fact: its end date in the next reply, in Chinese.
    page.goto(f"{base}/")
    page.fill("#start-input", "请记住：我这周在东京出差。")
    page.keyboard.press("Enter")
    expect(reply(page, 0)).to_have_attribute("data-status", "complete", timeout=20_000)
    page.fill("#composer-input", "帮我想想晚饭吃什么。")
    page.keyboard.press("Enter")
    expect(reply(page, 1)).to_have_attribute("data-status", "complete", timeout=20_000)
    said = reply(page, 1).locator(".message-text")
    expect(said).to_contain_text(re.compile(r"这周在东京（到 20\d\d年\d{1,2}月\d{1,2}日）"))
    expect(said).not_to_contain_text("until")
    expect(said).not_to_contain_text(re.compile(r"[A-Za-z]+ \(|\d{4}-\d\d-\d\d"))
    assert_chinese(page, "a reply that names a memory's end date")
    audit_phone(page, "a reply that names a memory's end date")


def test_the_conversation_list_its_date_groups_filter_and_rename_are_chinese(
    zh_page: Any, live_server_url: str, live_server_env: dict[str, str]
) -> None:
    from playwright.sync_api import expect

    from tests.e2e.browser import manage

    page, base = zh_page, live_server_url
    sign_up(page, base, "小周")
    for text in ("去里斯本旅行", "学习做饺子"):
        page.goto(f"{base}/")
        page.fill("#start-input", text)
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
        expect(reply(page, 0)).to_have_attribute("data-status", "complete")
    code = (
        "from datetime import timedelta; from django.utils import timezone; from chat.models import Conversation; "
        "Conversation.objects.filter(title='去里斯本旅行').update(updated_at=timezone.now() - timedelta(days=1))"
    )
    manage(live_server_env, "shell", "-c", code)
    page.reload()
    nav = page.locator("#conversation-nav")
    expect(nav.get_by_role("heading", name="今天")).to_be_visible()
    expect(nav.get_by_role("heading", name="昨天")).to_be_visible()
    assert_chinese(page, "the list under its date headings")

    # The filter box, by keyboard: the count is said in Chinese, Escape lists everything again.
    box = page.get_by_role("searchbox", name="按标题筛选对话")
    box.focus()
    page.keyboard.type("里斯本")
    expect(page.locator("#sidebar-filter-status")).to_have_text("有 1 个对话的标题包含“里斯本”。")
    expect(nav.locator(".conversation-item")).to_have_count(1)
    assert_chinese(page, "the list filtered by title")
    audit_phone(page, "the list filtered by title")
    box.focus()
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar-filter-status")).to_have_text("已清除筛选：列出全部对话。")
    expect(nav.locator(".conversation-item")).to_have_count(2)

    # Rename in place from the list, by keyboard.
    actions = nav.locator(".conversation-item", has_text="去里斯本旅行").locator("summary")
    expect(actions).to_have_accessible_name("去里斯本旅行 操作")
    actions.focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("重命名")
    page.keyboard.press("Enter")
    title = page.get_by_role("textbox", name="新标题")
    expect(title).to_be_focused()
    assert_chinese(page, "renaming a conversation in the list")
    page.keyboard.press("Control+A")
    page.keyboard.type("里斯本行程")
    page.keyboard.press("Enter")
    expect(nav.locator(".conversation-item", has_text="里斯本行程").locator("summary")).to_be_focused()
    assert_chinese(page, "the list after a rename")


def test_the_model_picker_regenerate_edit_pin_and_markdown_download_are_chinese_by_keyboard(
    zh_page: Any, live_server_url: str, provider: Any
) -> None:
    from playwright.sync_api import expect

    from tests.fake_openai import FakeResponse

    page, base = zh_page, live_server_url
    sign_up(page, base, "小陈")
    provider.queue(FakeResponse("第一个版本。"))
    page.fill("#start-input", "讲一个关于猫的故事")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(reply(page, 0)).to_have_attribute("data-status", "complete")
    assert_chinese(page, "a conversation with the model picker")
    audit_phone(page, "a conversation with the model picker")

    # The model picker, by keyboard: the change is said in Chinese.
    choice = page.locator("#model-select")
    choice.focus()
    page.keyboard.press("ArrowDown")
    expect(page.locator("#model-status")).to_have_text("此后的回复将来自 fake-model。")
    expect(choice).to_be_focused()

    # Regenerate, then ‹ › between the versions.
    provider.queue(FakeResponse("第二个版本。"))
    reply(page, 0).get_by_role("button", name="重新生成").focus()
    page.keyboard.press("Enter")
    expect(reply(page, 0)).to_contain_text("第二个版本。")
    expect(reply(page, 0).locator(".version-count")).to_have_text("2/2")
    assert_chinese(page, "a regenerated reply with its versions")
    audit_phone(page, "a regenerated reply with its versions")
    page.get_by_role("button", name="上一个版本").focus()
    page.keyboard.press("Enter")
    expect(reply(page, 0)).to_contain_text("第一个版本。")
    expect(page.get_by_role("button", name="上一个版本")).to_be_disabled()
    page.get_by_role("button", name="下一个版本").focus()
    page.keyboard.press("Enter")
    expect(reply(page, 0).locator(".version-count")).to_have_text("2/2")

    # Edit the last message sent.
    edit = page.locator(".message-user").last.locator(".edit-message")
    edit.locator("summary").focus()
    expect(edit.locator("summary")).to_have_text("编辑")
    page.keyboard.press("Enter")
    box = edit.locator("textarea")
    expect(box).to_be_visible()
    assert_chinese(page, "editing the last message")
    audit_phone(page, "editing the last message")
    box.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("讲一个关于狗的故事")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator(".message-user")).to_have_count(1)
    expect(page.locator(".message-user")).to_contain_text("讲一个关于狗的故事")
    expect(reply(page, 0)).to_have_attribute("data-status", "complete")

    # Pin from the conversation's menu, then save it as Markdown from the same menu.
    page.locator(".title-row summary").focus()
    page.keyboard.press("Enter")
    assert_chinese(page, "the conversation's menu")
    page.get_by_role("button", name="置顶").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#conversation-nav").get_by_role("heading", name="已置顶")).to_be_visible()
    assert_chinese(page, "a pinned conversation")
    page.locator(".title-row summary").focus()
    page.keyboard.press("Enter")
    with page.expect_download() as info:
        page.get_by_role("link", name="另存为 Markdown").focus()
        page.keyboard.press("Enter")
    text = Path(info.value.path()).read_text(encoding="utf-8")
    assert "讲一个关于狗的故事" in text and "讲一个关于猫的故事" not in text
