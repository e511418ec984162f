"""Our Django admin pages (memories, extraction runs, conversations, messages) pass axe at desktop and
phone width, light and dark, with no serious or critical violation (tests/e2e/axe.py), and no table
header without a name."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import audit, run_axe
from tests.e2e.browser import PASSWORD, manage

pytestmark = pytest.mark.browser

# A staff user, and one user's conversation, memories (one with a source, one replaced) and runs.
SETUP = f"""
from accounts.models import User
from chat.models import AgentState, Conversation, Message
from memory.models import ExtractionRun, Memory, MemorySource
User.objects.create_superuser("admin-axe", "", {PASSWORD!r})
owner = User.objects.create_user("axe-owner", password={PASSWORD!r})
conversation = Conversation.objects.create(owner=owner, title="Phones")
AgentState.objects.create(conversation=conversation, context=[{{"role": "user", "content": "hi"}}])
said = Message.objects.create(conversation=conversation, user=owner, role="user", content="I like small phones.")
Message.objects.create(conversation=conversation, user=owner, role="assistant", content="Noted.")
new = Memory.objects.create(owner=owner, content="Prefers small phones")
old = Memory.objects.create(owner=owner, content="Likes phones", superseded_by=new)
Memory.objects.filter(pk=old.pk).update(invalid_reason="updated", invalid_at=new.created_at)
MemorySource.objects.create(memory=new, message=said)
ExtractionRun.objects.create(owner=owner, trigger="threshold", status="applied", message_ids=[said.pk],
    judge_input=[{{"role": "user", "content": "1. I like small phones."}}], raw_output="{{}}",
    applied_ops=[{{"op": "add", "content": "Prefers small phones"}}], dropped_ops=[])
print(conversation.pk, said.pk, new.pk, old.pk, ExtractionRun.objects.get(owner=owner).pk)
"""


@pytest.fixture(scope="module")
def admin_data(live_server_env: dict[str, str]) -> None:
    manage(live_server_env, "shell", "-c", SETUP)


def log_in(page: Any, base: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "admin-axe")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("memory/memory/", "memories"),
        ("memory/extractionrun/", "extraction runs"),
        ("chat/conversation/", "conversations"),
        ("chat/message/", "messages"),
    ],
)
def test_admin_list_and_one_item_pass_axe(
    page: Any, live_server_url: str, admin_data: None, path: str, what: str
) -> None:
    base = live_server_url
    log_in(page, base)
    if what == "memories":
        audit(page, "admin index")
    page.goto(f"{base}/admin/{path}")
    expect(page.locator("#result_list")).to_be_visible()
    audit(page, f"admin {what} list")
    page.locator("#result_list tbody tr", has_text="axe-owner").locator("th a").first.click()
    expect(page.locator("#content-main")).to_be_visible()
    audit(page, f"admin {what}: one")
    assert not [v for v in run_axe(page) if v.rule == "empty-table-header"], what
