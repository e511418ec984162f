"""Settings → Memory in Chromium, on the offline demo model: learn a memory in chat (in the background
after three messages, as SPEC §1 step 2, and by asking to remember), see the live "Memory updated"
notices, follow a memory to its source message, edit, delete, restore, reload, and switch memory off
so the next turn's model input carries no memories."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import running_stack, sign_up
from tests.fake_openai import FakeOpenAIServer, FakeResponse

pytestmark = pytest.mark.browser

# The demo model ends a reply with this when the turn's input had a memory block.
MEMORY_LINE = "What I remember about you:"


@pytest.fixture(scope="module")
def demo_server_url(demo_stack_url: str) -> str:
    """The offline demo model, with a Celery worker for background extraction; the model calls
    flush_memory (in the web process) only when asked to remember, correct or forget."""
    return demo_stack_url


def provider_reply(body: dict[str, Any]) -> FakeResponse:
    """A scripted provider: the judge remembers seat and allergy facts; chat asks for flush_memory
    when told to "remember", and otherwise answers briefly."""
    messages = body["messages"]
    if body.get("response_format"):  # the memory judge
        shown = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
        ops = []
        for pattern, content in (("window seats", "Prefers window seats on flights"), ("peanuts", FLUSHED)):
            numbers = [int(n) for n in re.findall(rf"^(\d+)\. .*{pattern}", shown, re.MULTILINE)]
            if numbers:
                ops.append({"op": "add", "content": content, "sources": numbers})
        return FakeResponse(json.dumps({"operations": ops}))
    last = messages[-1]
    if last["role"] == "user" and "remember" in str(last["content"]).lower():
        return FakeResponse(tool_calls=[{"id": "call_1", "name": "flush_memory", "arguments": "{}"}])
    return FakeResponse("Noted.")


FLUSHED = "Is allergic to peanuts"


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    server.responder = provider_reply
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker_server_url(tmp_path_factory: pytest.TempPathFactory, provider: FakeOpenAIServer) -> Iterator[str]:
    """A real Celery worker runs background extraction in its own process."""
    settings = {
        "LLM_BACKEND": "openai", "OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "test-key",
        "CHAT_MODEL": "local-model", "LLM_MAX_RETRIES": "0", "MEMORY_EXTRACT_MIN_TURNS": "3",
    }  # fmt: skip
    with running_stack(tmp_path_factory.mktemp("memora-memory-worker"), settings, worker=True) as url:
        yield url


def send(page: Any, text: str) -> Any:
    """Send a message in the open conversation and wait for the reply to be complete."""
    replies = page.locator(".message-assistant")
    before = replies.count()
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")
    reply = replies.nth(before)
    expect(reply).to_have_attribute("data-status", "complete", timeout=20_000)
    return reply


def _with_content(rows: Any, text: str) -> Any:
    """Rows whose memory sentence is exactly `text`."""
    return rows.filter(has=rows.page.locator(".memory-content", has_text=re.compile(rf"^\s*{re.escape(text)}\s*$")))


def row(page: Any, text: str) -> Any:
    return _with_content(page.locator("#memory-list > .memory-row"), text)


def history_row(page: Any, text: str) -> Any:
    return _with_content(page.locator("#memory-history .memory-row"), text)


def test_learn_review_edit_delete_restore_and_switch_off(
    page: Any, demo_server_url: str, browser: Any, screenshots: Path
) -> None:
    base = demo_server_url
    sign_up(page, base, "alice")

    # SPEC §1: a preference said in passing is not flushed; it waits with the other messages...
    page.fill("#start-input", "I've always liked small phones, they're easy to use one-handed.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete", timeout=20_000)
    send(page, "Today I'm helping a friend pick a phone — his budget this time is 3000.")
    expect(page.locator(".notice-memory")).to_have_count(0)

    # ...until the third pending message, in a new conversation, starts the background run in the
    # worker: it remembers the small-phone preference only, and the page's poll brings the notice.
    page.goto(f"{base}/")
    page.fill("#start-input", "I want a new phone, suggest a few.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    conversation_url = page.url
    notice = page.locator(".notice-memory").first
    expect(notice).to_contain_text("Memory updated: remembered “Prefers small phones", timeout=15_000)
    expect(page.locator(".notice-memory")).to_have_count(1)
    # The worker's marker shows in the open conversation at once, not after a reload.
    expect(page.locator(".conversation-marker.marker-memory")).to_have_count(1, timeout=5_000)
    # One memory: its row; several: all of them (?review=), focus on the first.
    review = re.compile(r"^/settings/memory/(\?review=[\d,]+)?#memory-\d+$")
    expect(notice.get_by_role("link", name="Review")).to_have_attribute("href", review)
    audit(page, "conversation with a memory notice")
    page.wait_for_timeout(9_000)  # a notice stays until it is dismissed or the next message is sent
    expect(notice).to_be_visible()

    # Asking to remember flushes at once; the review covers the earlier message too.
    send(page, "I live in Lyon.")
    send(page, "Remember that I'm vegetarian.")
    learned = page.locator(".notice-memory", has_text="remembered “Is vegetarian”")
    expect(learned).to_be_visible(timeout=5_000)
    expect(learned).to_contain_text("remembered “Lives in Lyon”")
    expect(page.locator(".notice-memory")).to_have_count(1)  # sending cleared the earlier one
    # The conversation keeps a lasting marker where the memory changed, also after a reload.
    marker = page.locator(".conversation-marker.marker-memory", has_text="Memory updated · ")
    expect(marker.last).to_contain_text("Is vegetarian")
    page.reload()
    expect(page.locator(".conversation-marker.marker-memory")).to_have_count(2)  # the background run's too
    expect(page.locator(".conversation-marker").first).to_contain_text("Memory updated · Prefers small phones")
    expect(page.locator(".conversation-marker").last.get_by_role("link", name="Review")).to_have_attribute(
        "href", review
    )
    audit(page, "conversation with memory markers")

    # Open Settings → Memory from the notice.
    # Open Settings → Memory from a marker: it goes to the changed memory, highlighted.
    page.locator(".conversation-marker", has_text="Is vegetarian").get_by_role("link", name="Review").click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(base)}/settings/memory/(\?review=[\d,]+)?#memory-\d+$"))
    target = page.locator(".memory-row:target")
    expect(target).to_have_count(1)
    expect(target).to_be_in_viewport()
    expect(page.get_by_role("heading", name="Active memories")).to_be_visible()
    phones, veggie = row(page, "Prefers small phones, finds them easier to use one-handed"), row(page, "Is vegetarian")
    expect(page.locator("#memory-list > .memory-row")).to_have_count(3)
    expect(page.locator("#memory-list > .memory-row").first).to_contain_text("Is vegetarian")  # newest first
    expect(phones).to_contain_text("Learned from chat")

    # Search filters as you type.
    page.fill("#memory-search", "phones")
    expect(page.locator("#memory-list > .memory-row")).to_have_count(1)
    page.fill("#memory-search", "")
    expect(page.locator("#memory-list > .memory-row")).to_have_count(3)

    # Follow a source link to the message it was learned from.
    source = phones.locator(".source-link")
    expect(source).to_contain_text("I've always liked small phones")
    href = source.get_attribute("href")
    assert href and re.fullmatch(r"/c/[0-9a-f-]{36}/#message-\d+", href)
    source.click()
    expect(page).to_have_url(f"{base}{href}")
    target = page.locator(f"#{href.split('#')[1]}")
    expect(target).to_contain_text("I've always liked small phones")
    expect(target).to_be_in_viewport()
    page.go_back()
    expect(page).to_have_url(re.compile(rf"^{re.escape(base)}/settings/memory/"))

    # Edit in place: Escape cancels; an over-long text is refused inline and kept; Save makes a new version.
    veggie.get_by_role("button", name="Edit").click()
    editor = page.locator(".memory-row.is-editing textarea")
    expect(editor).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator(".memory-row.is-editing")).to_have_count(0)
    expect(veggie.get_by_role("button", name="Edit")).to_be_focused()
    veggie.get_by_role("button", name="Edit").click()
    editor.fill("x" * 501)
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".memory-row.is-editing .field-errors")).to_contain_text("too long")
    expect(editor).to_have_value("x" * 501)
    editor.fill("Is vegetarian and avoids fish")
    page.get_by_role("button", name="Save").click()
    edited = row(page, "Is vegetarian and avoids fish")
    expect(edited).to_contain_text("Edited by you")
    expect(history_row(page, "Is vegetarian")).to_contain_text("Edited by you")

    # Delete, with a confirmation step.
    phones.get_by_role("button", name="Delete").click()
    expect(phones).to_contain_text("Delete this memory permanently?")
    phones.get_by_role("button", name="Delete").click()
    expect(page.locator("#memory-list > .memory-row", has_text="Prefers small phones")).to_have_count(0)

    # Add one by hand.
    page.fill("#memory-add-input", "Prefers metric units")
    page.get_by_role("button", name="Add memory").click()
    expect(row(page, "Prefers metric units")).to_contain_text("Added by you")

    # Restore the earlier wording from History: it replaces the edited version.
    history_row(page, "Is vegetarian").get_by_role("button", name="Restore").click()
    expect(row(page, "Is vegetarian and avoids fish")).to_have_count(0)
    expect(row(page, "Is vegetarian")).to_contain_text("Restored by you")
    expect(history_row(page, "Is vegetarian and avoids fish")).to_contain_text("Replaced when you restored")

    # Everything persisted.
    page.goto(f"{base}/settings/memory/")  # a fresh load, without the Review link's #memory-N
    active = page.locator("#memory-list > .memory-row")
    expect(active).to_have_count(3)
    expect(active.nth(0)).to_contain_text("Is vegetarian")
    expect(active.nth(0)).to_contain_text("Restored by you")
    expect(active.nth(1)).to_contain_text("Prefers metric units")
    expect(active.nth(2)).to_contain_text("Lives in Lyon")
    expect(page.locator("#memory-history")).not_to_contain_text("Prefers small phones")
    expect(page.locator("#memory-history")).to_contain_text("Is vegetarian and avoids fish")
    expect(page.locator("#memory-summary")).to_contain_text(re.compile(r"[\d,]+ of 4,000 characters"))

    page.evaluate("document.getElementById('memory-status').textContent = ''")
    page.screenshot(path=str(screenshots / "memory-desktop.png"))
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, storage_state=page.context.storage_state(), color_scheme="light"
    )
    try:
        small = phone.new_page()
        small.goto(f"{base}/settings/memory/")
        expect(small.get_by_role("button", name="Edit").first).to_be_visible()
        assert small.evaluate("document.documentElement.scrollWidth") <= 390
        small.screenshot(path=str(screenshots / "memory-phone.png"))
    finally:
        phone.close()

    # With memory on, the next turn's model input has the memory block...
    page.goto(conversation_url)
    assert "Is vegetarian" in send(page, "What should I cook tonight").inner_text()

    # ...and switched off, it has none.
    page.goto(f"{base}/settings/memory/")
    switch = page.get_by_role("switch", name="Memory")
    expect(switch).to_have_attribute("aria-checked", "true")
    switch.click()
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(page.locator("#memory-summary")).to_contain_text("Memory is off")
    page.goto(conversation_url)
    reply = send(page, "What should I cook tomorrow")
    assert MEMORY_LINE not in reply.inner_text()
    assert "Is vegetarian" not in reply.inner_text()


def test_basic_actions_work_without_javascript(browser: Any, demo_server_url: str) -> None:
    base = demo_server_url
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        sign_up(page, base, "nojs")
        page.goto(f"{base}/settings/memory/")
        expect(page.get_by_text("Nothing remembered yet")).to_be_visible()
        page.fill("#memory-add-input", "Prefers tea")
        page.get_by_role("button", name="Add memory").click()
        expect(row(page, "Prefers tea")).to_be_visible()
        row(page, "Prefers tea").get_by_role("button", name="Edit").click()
        page.fill(".memory-row.is-editing textarea", "Prefers green tea")
        page.get_by_role("button", name="Save").click()
        expect(row(page, "Prefers green tea")).to_be_visible()
        history_row(page, "Prefers tea").get_by_role("button", name="Restore").click()
        expect(row(page, "Prefers tea")).to_contain_text("Restored by you")
        row(page, "Prefers tea").get_by_role("button", name="Delete").click()
        page.locator(".memory-row.is-confirming").get_by_role("button", name="Delete").click()
        expect(page.locator("#memory-list > .memory-row")).to_have_count(0)
        page.fill("#memory-add-input", "Lives in Lyon")
        page.get_by_role("button", name="Add memory").click()
        page.get_by_role("button", name="Forget everything").click()
        expect(page.get_by_text("Forget all 1 active memory?")).to_be_visible()
        page.get_by_role("button", name="Cancel").click()
        expect(row(page, "Lives in Lyon")).to_be_visible()
        page.get_by_role("button", name="Forget everything").click()
        page.get_by_role("button", name="Forget everything").click()
        expect(page.locator("#memory-status")).to_have_text("Forgot 1 memory.")
        expect(history_row(page, "Lives in Lyon")).to_contain_text("Cleared when everything was forgotten")
        expect(page.get_by_text("Nothing remembered yet")).to_have_count(0)
        expect(page.get_by_text("No active memories")).to_be_visible()
        expect(page.locator("#memory-list")).to_contain_text("Forgotten ones are in History below")
    finally:
        context.close()


def chat_requests(provider: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [body for body in provider.requests if not body.get("response_format")]


def test_background_run_in_the_worker_reaches_the_page_and_memory_off_sends_no_memories(
    page: Any, worker_server_url: str, provider: FakeOpenAIServer
) -> None:
    base = worker_server_url
    sign_up(page, base, "bob")
    page.fill("#start-input", "I always book window seats when I fly.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete")
    expect(page.locator("#memory-notice-poller")).to_have_count(1)

    # The third pending message starts a background run in the Celery worker's process: its
    # push cannot cross to this web process on the in-memory layer, so the page's poll brings it.
    send(page, "Which airlines fly to Lisbon?")
    send(page, "Any tips for a long flight?")
    notice = page.locator(".notice-memory", has_text="remembered “Prefers window seats on flights”")
    expect(notice).to_have_count(1, timeout=10_000)

    # A flush run in the web process arrives both pushed and polled: it is shown once.
    send(page, "Please remember that I'm allergic to peanuts.")
    flushed = page.locator(".notice-memory", has_text=f"remembered “{FLUSHED}”")
    expect(flushed).to_have_count(1, timeout=5_000)
    page.wait_for_timeout(2_500)  # one more poll, which returns the same run again
    expect(flushed).to_have_count(1)
    expect(notice).to_have_count(0)  # sending the next message dismissed the earlier notice, for good

    # The model input carries the memory block while memory is on (the memories this message is about)...
    send(page, "What should I pack for the flight, and could peanuts be served on it?")
    system = " ".join(str(m["content"]) for m in chat_requests(provider)[-1]["messages"] if m["role"] == "system")
    assert "Prefers window seats on flights" in system and FLUSHED in system

    # ...and none once it is switched off.
    conversation_url = page.url
    page.goto(f"{base}/settings/memory/")
    page.get_by_role("switch", name="Memory").click()
    expect(page.get_by_role("switch", name="Memory")).to_have_attribute("aria-checked", "false")
    page.goto(conversation_url)
    send(page, "And for a short trip?")
    last = chat_requests(provider)[-1]["messages"]
    assert last[-1]["content"] == "And for a short trip?"
    system = " ".join(str(m["content"]) for m in last if m["role"] == "system")
    assert "window seats" not in system and "peanuts" not in system
    assert "What you remember about this user" not in system
