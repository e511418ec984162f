"""Suggestions in Chromium, on the offline demo model: a sensitive fact waits as "Memora would like to
remember …" with Keep and Discard in the conversation; with review set to "all", every learned fact
waits, and Settings → Memory's Suggested section keeps or discards them. The notice never covers the
conversation's first message, on a wide screen and on a phone, nor the text of a transcript that scrolls
(however many suggestions it holds); it quotes the memory once (no marks of its own around it), in English
and Chinese, live and after a reload."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo_server_url(demo_stack_url: str) -> str:
    """The offline demo model with a worker."""
    return demo_stack_url


def send(page: Any, text: str) -> None:
    replies = page.locator(".message-assistant")
    before = replies.count()
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    expect(replies.nth(before)).to_have_attribute("data-status", "complete", timeout=20_000)


def start(page: Any, base: str, text: str) -> None:
    page.goto(f"{base}/")
    page.fill("#start-input", text)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete", timeout=20_000)


def assert_apart(first: Any, second: Any) -> None:
    a, b = first.bounding_box(), second.bounding_box()
    assert a and b
    overlap = a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
    overlap = overlap and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]
    assert not overlap, (a, b)


@pytest.mark.parametrize("width", [1280, 390])
def test_keep_and_discard_in_the_conversation(page: Any, demo_server_url: str, width: int) -> None:
    base = demo_server_url
    page.set_viewport_size({"width": width, "height": 800})
    sign_up(page, base, f"keeper{width}")

    # "… now" makes the demo model flush; nothing asks to remember, so the sensitive fact waits.
    start(page, base, "I'm diabetic now.")
    notice = page.locator(".notice-memory").last
    expect(notice).to_contain_text("Memora would like to remember “Is diabetic”", timeout=10_000)
    assert_apart(notice, page.locator(".message").first)
    marker = page.locator(".conversation-marker.marker-memory")
    expect(marker).to_contain_text("Memora would like to remember “Is diabetic”")
    notice.get_by_role("button", name="Keep").click()
    expect(notice).to_contain_text("Kept: “Is diabetic”.")

    send(page, "I'm colour-blind now.")  # not sensitive: active at once under the default
    expect(page.locator(".notice-memory").last).to_contain_text("Memory updated: remembered “Is colour-blind”")

    page.goto(f"{base}/settings/memory/")
    page.get_by_label("Ask me before remembering any learned fact").check()
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#memory-status")).to_contain_text("Saved")

    start(page, base, "I'm left-handed now.")
    notice = page.locator(".notice-memory").last
    expect(notice).to_contain_text("Memora would like to remember “Is left-handed”", timeout=10_000)
    notice.get_by_role("button", name="Discard").click()
    expect(notice).to_contain_text("Discarded: “Is left-handed”.")

    page.goto(f"{base}/settings/memory/")
    active = page.locator("#memory-list > .memory-row")
    expect(active).to_have_count(2)
    expect(active.filter(has_text="Is diabetic")).to_contain_text("Sensitive")
    expect(page.locator("#memory-suggested .memory-row")).to_have_count(0)


def test_keep_and_discard_on_the_page(page: Any, demo_server_url: str) -> None:
    base = demo_server_url
    sign_up(page, base, "reviewer")
    page.goto(f"{base}/settings/memory/")
    page.get_by_label("Ask me before remembering any learned fact").check()
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#memory-status")).to_contain_text("Saved")

    start(page, base, "I'm vegan now.")
    expect(page.locator(".notice-memory").last).to_contain_text("Memora would like to remember", timeout=10_000)
    send(page, "I'm lactose intolerant now.")
    expect(page.locator(".notice-memory").last).to_contain_text("Is lactose intolerant", timeout=10_000)

    page.goto(f"{base}/settings/memory/")
    section = page.locator("#memory-suggested")
    expect(section.locator("[data-suggested-count]")).to_have_text("2")
    expect(page.locator("#memory-list > .memory-row")).to_have_count(0)
    section.locator(".memory-row", has_text="Is vegan").get_by_role("button", name="Keep").click()
    expect(page.locator("#memory-list > .memory-row", has_text="Is vegan")).to_have_count(1)
    expect(section.locator("[data-suggested-count]")).to_have_text("1")
    section.locator(".memory-row", has_text="Is lactose intolerant").get_by_role("button", name="Discard").click()
    expect(section.locator("[data-suggested-count]")).to_have_text("0")
    expect(section).to_contain_text("No suggestions waiting.")
    page.reload()
    expect(page.locator("#memory-list > .memory-row")).to_have_count(1)
    expect(page.locator("#memory-suggested .memory-row")).to_have_count(0)


# Quotation marks that CSS adds before or after an element (the start page's ideas are quoted that way).
ADDED_QUOTES = """root => [root, ...root.querySelectorAll('*')].flatMap(el => ['::before', '::after']
  .map(at => getComputedStyle(el, at).content).filter(c => c && c !== 'none' && c !== 'normal'))"""


@pytest.mark.parametrize(
    ("lang", "said", "wanted", "kept"),
    [
        ("en", "I'm left-handed now.", "Memora would like to remember “Is left-handed”.", "Kept: “Is left-handed”."),
        ("zh", "我现在更喜欢大屏手机了。", "Memora 想记住“偏好大屏手机”。", "已保留：“偏好大屏手机”。"),
    ],
)
def test_a_suggestion_in_the_conversation_has_no_stray_quote_marks(
    browser: Any, demo_server_url: str, lang: str, said: str, wanted: str, kept: str
) -> None:
    context = browser.new_context(
        viewport={"width": 1280, "height": 800},
        extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"} if lang == "zh" else {},
    )
    page = context.new_page()
    page.set_default_timeout(20_000)
    base = demo_server_url
    sign_up(page, base, f"quotes-{lang}")
    page.goto(f"{base}/settings/memory/")
    page.locator("#memory-review input[value=all]").check()
    page.locator("#memory-review button[type=submit]").click()
    expect(page.locator("#memory-review input[value=all]")).to_be_checked()

    start(page, base, said)  # pushed over the WebSocket (or brought by the poll) while the page is open
    suggestion = page.locator(".notice-memory .suggestion").last
    expect(suggestion.locator("p")).to_have_text(wanted, timeout=20_000)
    assert page.evaluate(ADDED_QUOTES, suggestion.element_handle()) == []
    assert suggestion.inner_text().splitlines()[0] == wanted  # what is seen: the sentence, nothing around it
    marker = page.locator(".conversation-marker.marker-memory .marker-text")
    expect(marker).to_have_text(wanted.rstrip(".。"))
    audit(page, f"a suggestion in the conversation ({lang})")
    suggestion.locator("button").first.click()  # Keep
    answered = page.locator(".notice-memory .suggestion.is-answered")
    expect(answered).to_contain_text(kept)
    assert page.evaluate(ADDED_QUOTES, answered.element_handle()) == []

    page.reload()  # the lasting marker, read again
    marker = page.locator(".conversation-marker.marker-memory")
    expect(marker).to_have_count(1)
    assert page.evaluate(ADDED_QUOTES, marker.element_handle()) in ([], ['""'])  # the dot before it only
    expect(marker.locator(".marker-text")).not_to_have_text(re.compile(r"^[“”「」\"]|[“”「」\"]$"))
    context.close()


# Points of the messages' text that something outside the transcript is drawn over, in view of the scroller.
COVERED = """() => {
  const view = document.getElementById('scroller').getBoundingClientRect(), covered = [];
  for (const text of document.querySelectorAll('#messages .bubble p, #messages .conversation-marker')) {
    const box = text.getBoundingClientRect();
    for (let y = Math.max(box.top, view.top) + 2; y < Math.min(box.bottom, view.bottom) - 2; y += 5) {
      for (const x of [box.left + 4, box.left + box.width / 2, box.right - 4]) {
        const top = document.elementFromPoint(x, y);
        if (top && !top.closest('#messages')) covered.push(`${Math.round(x)},${Math.round(y)}: ${top.className}`);
      }
    }
  }
  return covered;
}"""


@pytest.mark.parametrize(("lang", "width", "height"), [("en", 1280, 600), ("zh", 390, 664)])
def test_notices_never_cover_the_transcript_while_it_scrolls(
    browser: Any, demo_server_url: str, lang: str, width: int, height: int
) -> None:
    context = browser.new_context(
        viewport={"width": width, "height": height},
        extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"} if lang == "zh" else {},
    )
    page = context.new_page()
    page.set_default_timeout(20_000)
    base = demo_server_url
    sign_up(page, base, f"scroller-{lang}-{width}")
    page.goto(f"{base}/settings/memory/")
    page.locator("#memory-review input[value=all]").check()
    page.locator("#memory-review button[type=submit]").click()
    expect(page.locator("#memory-review input[value=all]")).to_be_checked()
    start(page, base, "Tell me about gardens " + "and the plants in them " * 12)
    for i in range(3):  # a transcript that scrolls
        send(page, f"More about gardens {i} " + "and the plants in them " * 12)
    send(page, "I'm left-handed now. I'm diabetic now. I'm colour-blind now. I'm vegan now.")
    suggestions = page.locator(".notice-memory .suggestion")
    expect(suggestions).to_have_count(4, timeout=20_000)  # one notice, four waiting memories

    notices, scroller, chat = (page.locator(s).bounding_box() for s in ("#notices", "#scroller", ".chat"))
    assert notices and scroller and chat
    assert notices["y"] + notices["height"] <= scroller["y"] + 0.5  # above the transcript, not over it
    assert notices["height"] <= 0.4 * chat["height"] + 1, (notices, chat)  # the transcript keeps the rest
    assert scroller["height"] >= notices["height"]
    for part in (0, 0.25, 0.5, 0.75, 1):
        page.evaluate("f => { const s = document.getElementById('scroller'); s.scrollTop = f * s.scrollHeight; }", part)
        assert page.evaluate(COVERED) == [], part

    # The last suggestion is reached by scrolling the notices themselves, and answered there.
    suggestions.last.get_by_role("button", name="Keep" if lang == "en" else "保留").click()
    expect(page.locator(".notice-memory .suggestion.is-answered")).to_have_count(1)
    audit(page, f"four suggestions over a long transcript ({lang}, {width} px)")
    context.close()
