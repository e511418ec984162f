"""Every page passes the Content-Security-Policy in Chromium: no inline script or style is refused."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import sign_up

pytestmark = pytest.mark.browser


def test_pages_load_without_csp_violations(page: Any, live_server_url: str) -> None:
    base = live_server_url
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)

    page.goto(f"{base}/accounts/login/")
    sign_up(page, base, "csp-checker")
    page.fill("#start-input", "Hello there")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").first).to_have_attribute("data-status", "complete", timeout=20_000)
    for path in ("/", "/settings/memory/", "/settings/tokens/", "/accounts/password/", "/api/docs"):
        page.goto(f"{base}{path}")
        page.wait_for_load_state("networkidle")
    header = page.request.get(f"{base}/").headers["content-security-policy"]
    assert "script-src 'self'" in header and "frame-ancestors 'none'" in header
    # htmx would have added its indicator <style> element had the meta config not switched it off.
    assert page.locator("head style").count() == 0
    assert violations == []
