"""Settings → Account in Chromium: reached from the user menu, downloads all the data, refuses a wrong
password, deletes the account with the right one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import PASSWORD, sign_up

pytestmark = pytest.mark.browser


def test_the_account_page_downloads_everything_and_deletes_the_account(page: Any, live_server_url: str) -> None:
    sign_up(page, live_server_url, "leaving-user")
    page.fill("#start-input", "Hello there, I love small phones.")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=20_000)

    page.locator(".user-menu summary").click()
    page.get_by_role("link", name="Settings → Account").click()
    expect(page).to_have_url(f"{live_server_url}/settings/account/")
    expect(page.get_by_role("heading", name="Delete my account")).to_be_visible()
    audit(page, "account page")

    with page.expect_download() as download_info:
        page.locator("#account-export").click()
    document = json.loads(Path(download_info.value.path()).read_text(encoding="utf-8"))
    assert document["account"]["username"] == "leaving-user"
    messages = [m["content"] for c in document["conversations"] for m in c["messages"]]
    assert "Hello there, I love small phones." in messages

    page.fill("#id_password", "not my password")
    page.locator("#account-delete").click()
    expect(page.locator(".field-errors")).to_contain_text("not correct")

    page.fill("#id_password", PASSWORD)
    page.locator("#account-delete").click()
    expect(page).to_have_url(re.compile(r"/accounts/deleted/$"))
    expect(page.get_by_role("heading", name="Your account is deleted")).to_be_visible()
    page.goto(f"{live_server_url}/accounts/login/")
    page.fill("#id_username", "leaving-user")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
