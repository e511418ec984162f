"""Projects in Chromium (SPEC §9): create a project, chat in it, see "Used N memories" name each memory's
scope, move a memory between scopes on Settings → Memory, end the project; axe finds nothing serious on the
new pages (light and dark, desktop and phone), in English and in Chinese."""

from __future__ import annotations

import re
from collections.abc import Iterator
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


def last_system_prompt(provider: FakeOpenAIServer) -> str:
    request = [r for r in provider.requests if r.get("stream")][-1]
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def test_a_project_from_start_to_end(page: Any, live_server_url: str, provider: FakeOpenAIServer) -> None:
    base = live_server_url
    sign_up(page, base, "project-alice")
    add_memory(page, base, "Lives in Lyon")
    add_memory(page, base, "The thesis is about glaciers")

    page.goto(f"{base}/projects/")
    audit(page, "projects list")
    page.fill("#id_name", "Thesis")
    page.fill("#id_instructions", "Cite sources in APA style.")
    page.get_by_label("Isolated: uses and learns only the project's memories").check()
    page.get_by_role("button", name="Create project").click()
    expect(page.locator(".project-page h2")).to_have_text("Thesis")
    audit(page, "project page")

    # Move a memory into the project from Settings → Memory: the old placement stays in History.
    page.goto(f"{base}/settings/memory/")
    row = page.locator("#memory-list .memory-row", has_text="The thesis is about glaciers")
    expect(row.locator(".memory-scope")).to_have_text("about you")
    row.locator("select[name=scope]").select_option(label="Thesis")
    row.get_by_role("button", name="Move").click()
    moved = page.locator("#memory-list .memory-row", has_text="The thesis is about glaciers")
    expect(moved.locator(".memory-scope")).to_have_text("project: Thesis")
    audit(page, "memory page with scopes")
    page.select_option("#memory-scope", "user")
    expect(page.locator("#memory-list .memory-row", has_text="glaciers")).to_have_count(0)
    expect(page.locator("#memory-list .memory-row", has_text="Lives in Lyon")).to_have_count(1)

    # Chat in the project: its instructions and only its memories go with the turn.
    page.goto(f"{base}/")
    page.select_option("#start-project", label="Thesis")
    page.fill("#start-input", "What are glaciers made of?")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    reply = page.locator(".message-assistant").first
    expect(reply).to_have_attribute("data-status", "complete", timeout=20_000)
    prompt = last_system_prompt(provider)
    assert "The thesis is about glaciers" in prompt and "Cite sources in APA style." in prompt
    assert "Lives in Lyon" not in prompt  # isolated: the user's general memories stay out
    used = reply.locator("details.reply-memories")
    used.locator("summary").click()
    expect(used.locator(".reply-memory-scope")).to_have_text("project: Thesis")
    expect(page.locator("#conversation-project")).to_have_value(re.compile(r"\d+"))
    expect(
        page.locator(".sidebar-projects .project-group", has_text="Thesis").locator(".conversation-link")
    ).to_have_count(1)
    audit(page, "conversation in a project")

    # End the project, moving its memories to the user.
    page.goto(f"{base}/projects/")
    page.get_by_role("link", name="Thesis").first.click()
    expect(page).to_have_url(re.compile(r"/projects/\d+/$"))
    page.wait_for_load_state()  # a link clicked while the page still loads can lose to the load
    page.get_by_role("link", name="End this project…").click()
    # The audit changes the viewport and colour scheme: it starts once the page it audits has loaded.
    expect(page).to_have_url(re.compile(r"/projects/\d+/end/$"))
    page.wait_for_load_state()
    audit(page, "end the project")
    page.get_by_label("Keep its conversations and move its memories to you").check()
    page.get_by_role("button", name="End the project").click()
    expect(page).to_have_url(f"{base}/projects/")
    page.goto(f"{base}/settings/memory/")
    row = page.locator("#memory-list .memory-row", has_text="The thesis is about glaciers")
    expect(row.locator(".memory-scope")).to_have_text("about you")


@pytest.fixture
def zh_page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_the_project_pages_in_chinese(zh_page: Any, live_server_url: str) -> None:
    page, base = zh_page, live_server_url
    sign_up(page, base, "project-zh")
    page.goto(f"{base}/projects/")
    expect(page.locator("h2").first).to_have_text("项目")
    page.fill("#id_name", "论文")
    page.get_by_role("button", name="创建项目").click()
    expect(page.locator(".project-page h2")).to_have_text("论文")
    expect(page.get_by_role("link", name="结束这个项目…")).to_be_visible()
    audit(page, "project page in Chinese")
    page.get_by_role("link", name="结束这个项目…").click()
    audit(page, "end the project in Chinese")
