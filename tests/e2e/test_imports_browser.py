"""Settings → Import in Chromium, on the offline demo model with a real worker: upload a ChatGPT export,
read its preview, import it while the page shows progress, learn from it (the demo judge proposes the
phone preference as a suggestion), remove it; axe finds nothing serious; the page speaks Chinese too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up
from tests.imports import exports

pytestmark = pytest.mark.browser

PHONE = "I've always liked small phones, they're easy to use one-handed."
# What the demo judge proposes from the imported phone chats (the English one, or the Chinese one).
PHONE_PREFERENCE = re.compile(r"Prefers small phones|偏好小屏手机")


@pytest.fixture(scope="module")
def import_server_url(demo_stack_url: str) -> str:
    """The offline demo model with a worker, which runs the import and its extraction."""
    return demo_stack_url


def _export(filler: int) -> bytes:
    """The phone chat, a Chinese one, a broken one, and `filler` more (so the import takes a moment)."""
    phone = exports.gpt_conversation(
        "c-small",
        "Phones",
        [
            ("root", None, None),
            ("u1", "root", exports.gpt_message("u1", "user", [PHONE], at=exports.T0 + 10)),
            ("a1", "u1", exports.gpt_message("a1", "assistant", ["Noted."], at=exports.T0 + 20)),
        ],
        current="a1",
    )
    more = [
        exports.gpt_conversation(
            f"f-{n}",
            f"Old chat {n}",
            [
                ("root", None, None),
                ("u", "root", exports.gpt_message("u", "assistant", [f"Answer number {n}. " * 40], at=exports.T0 + n)),
            ],
            current="u",
        )
        for n in range(filler)
    ]
    return exports.chatgpt_zip([phone, exports.gpt_chinese(), exports.gpt_cycle(), *more])


def _upload(page: Any, data: bytes, *, button: str = "Preview") -> None:
    page.set_input_files("#import-file", {"name": "chatgpt-export.zip", "mimeType": "application/zip", "buffer": data})
    page.get_by_role("button", name=button).click()


def test_preview_import_with_progress_learn_and_remove(page: Any, import_server_url: str) -> None:
    base = import_server_url
    sign_up(page, base, "mover")
    page.goto(f"{base}/settings/import/")
    audit(page, "import page, empty")

    # A bad file: a message on the page, nothing listed.
    not_an_export = {"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG not an export"}
    page.set_input_files("#import-file", not_an_export)
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("alert")).to_contain_text("neither a ZIP nor a JSON file")
    expect(page.locator(".import-item")).to_have_count(0)

    _upload(page, _export(3000))
    item = page.locator(".import-item").first
    expect(item).to_contain_text("3002 conversations")
    expect(item).to_contain_text("its message tree has a cycle")
    audit(page, "import page, preview")

    item.get_by_role("button", name="Import").click()
    expect(page.locator(".import-item progress").first).to_be_visible()  # the worker reads, the page follows
    page.reload()  # the progress survives a reload
    expect(item).to_contain_text("3002 conversations imported", timeout=60_000)

    item.get_by_role("button", name="Learn from imported chats").click()
    expect(item).to_contain_text("suggestion", timeout=60_000)
    expect(item.get_by_role("link", name="Settings → Memory")).to_be_visible(timeout=60_000)
    audit(page, "import page, learned")
    item.get_by_role("link", name="Settings → Memory").click()
    suggested = page.get_by_role("region", name=re.compile("Suggested"))
    expect(suggested.get_by_role("listitem").filter(has_text=PHONE_PREFERENCE).first).to_be_visible()

    page.goto(f"{base}/settings/import/")
    item = page.locator(".import-item").first
    item.locator("summary", has_text="Remove this import").click()
    item.get_by_role("button", name="Remove for good").click()
    expect(page.locator(".notices")).to_contain_text("3002 conversations")
    expect(page.locator(".import-item")).to_have_count(0)
    page.goto(f"{base}/settings/memory/")
    expect(page.get_by_role("listitem").filter(has_text=PHONE_PREFERENCE)).to_have_count(0)


def test_the_import_page_speaks_chinese(page: Any, import_server_url: str) -> None:
    base = import_server_url
    page.context.set_extra_http_headers({"Accept-Language": "zh-Hans"})
    sign_up(page, base, "banjia")
    page.goto(f"{base}/settings/import/")

    expect(page.get_by_role("heading", name="把你在 ChatGPT 或 Claude 的对话带过来")).to_be_visible()
    expect(page.locator("#import-prompt")).to_contain_text("请列出你在我们的对话中记住的关于我的所有信息")
    _upload(page, _export(0), button="预览")
    expect(page.locator(".import-item").first).to_contain_text("2 个对话")
    audit(page, "import page in Chinese")
