"""Django admin in Chromium: the extraction-runs list fits a 1280 px screen."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import PASSWORD, manage

pytestmark = pytest.mark.browser

# A staff user and runs with long contents in every text field a column might show.
SETUP = f"""
from datetime import timedelta
from django.utils import timezone
from accounts.models import User
from memory.models import ExtractionRun
admin = User.objects.create_superuser("admin-1280", "", {PASSWORD!r})
owner = User.objects.create_user("a-user-with-a-rather-long-username-for-the-column", password={PASSWORD!r})
now = timezone.now()
for i, status in enumerate(["applied", "dropped", "failed", "running", "noop"]):
    run = ExtractionRun.objects.create(
        owner=owner, trigger="threshold", status=status, message_ids=list(range(40)), attempt=1 + i % 3,
        model="a-provider/with-a-very-long-model-name-that-could-push-columns-apart",
        error="The model provider answered HTTP 400: " + "context length exceeded " * 20,
        raw_output="{{}}" * 200, applied_ops=[{{"op": "add"}}] * 3, dropped_ops=[{{"op": "update"}}] * 2,
    )
    finished = None if status == "running" else now + timedelta(milliseconds=1234 * (i + 1))
    ExtractionRun.objects.filter(pk=run.pk).update(started_at=now, finished_at=finished)
"""


def test_extraction_runs_list_fits_1280_px_with_start_and_duration_in_view(
    page: Any, live_server_url: str, live_server_env: dict[str, str]
) -> None:
    manage(live_server_env, "shell", "-c", SETUP)
    page.goto(f"{live_server_url}/admin/login/?next=/admin/memory/extractionrun/")
    page.fill("#id_username", "admin-1280")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    # This test's runs (other tests on the same server may have added their own).
    owner = page.locator("span[title='a-user-with-a-rather-long-username-for-the-column']")
    expect(page.locator("#result_list tbody tr", has=owner)).to_have_count(5)

    width = page.viewport_size["width"]
    assert width == 1280
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling
    for column in ("Started", "Duration", "Status"):
        header = page.locator("#result_list thead th", has_text=column).first
        box = header.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (column, box)
    expect(page.locator("#result_list tbody tr").first).to_contain_text(" s")  # a duration, in view
    # The filters stay beside the list, not pushed below it.
    assert page.locator("#changelist-filter").bounding_box()["x"] > page.locator("#result_list").bounding_box()["x"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_extraction_runs_list_fits_1280_px_without_scrolling_inside_either(
    browser: Any, live_server_url: str, live_server_env: dict[str, str], lang: str
) -> None:
    manage(live_server_env, "shell", "-c", SETUP.replace("admin-1280", f"admin-1280-{lang}").replace(
        "a-user-with-a-rather-long-username-for-the-column", f"a-user-with-a-rather-long-username-{lang}"
    ))  # fmt: skip
    headers = {"Accept-Language": "zh-CN,zh;q=0.9"} if lang == "zh" else {}
    context = browser.new_context(viewport={"width": 1280, "height": 800}, extra_http_headers=headers)
    page = context.new_page()
    page.goto(f"{live_server_url}/admin/login/?next=/admin/memory/extractionrun/")
    page.fill("#id_username", f"admin-1280-{lang}")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    owner = page.locator(f"span[title='a-user-with-a-rather-long-username-{lang}']")  # shown shortened
    rows = page.locator("#result_list tbody tr", has=owner)
    expect(rows).to_have_count(5)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # Django's admin puts the table in a box that scrolls sideways: nothing may hide in it either.
    fits = "(() => { const r = document.querySelector('.results'); return r.scrollWidth <= r.clientWidth; })()"
    assert page.evaluate(fits)
    context.close()
