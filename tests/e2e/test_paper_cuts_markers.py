"""The fourth walkthrough's remaining paper cuts, in Chromium, in English and Chinese: conversation markers
in the reader's language (live and after a reload)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import running_stack, sign_up

pytestmark = pytest.mark.browser

ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


@pytest.fixture(scope="module")
def demo_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The offline demo model; asked to remember, it flushes memory in the web process."""
    with running_stack(tmp_path_factory.mktemp("memora-markers"), {"LLM_BACKEND": "demo"}) as url:
        yield url


@pytest.mark.parametrize(
    ("lang", "lead", "review"), [("en", "Memory updated · ", "Review"), ("zh", "记忆已更新 · ", "查看")]
)
def test_a_memory_marker_speaks_the_readers_language_live_and_after_a_reload(
    browser: Any, demo_server_url: str, lang: str, lead: str, review: str
) -> None:
    # No language setting: the reader's browser decides, so a marker stored for the worker's default
    # language would show English to a Chinese reader.
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, extra_http_headers=ZH if lang == "zh" else {}
    )
    page = context.new_page()
    page.set_default_timeout(20_000)
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
    context.close()
