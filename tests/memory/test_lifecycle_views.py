"""Suggestions, pins and end dates on Settings → Memory and in the conversation's notice and marker."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.models import ConversationMarker
from memory import notice_selectors, notices
from memory.models import ExtractionRun, Memory
from memory.selectors import memories_active
from tests.helpers import make_conversation, make_memory, run, say

pytestmark = pytest.mark.django_db
HX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def browser(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def test_the_page_lists_suggestions_with_a_count_and_marks_sensitive_ones(browser: Client, user: User) -> None:
    make_memory(owner=user, content="Is diabetic.", suggested=True, sensitive=True)
    make_memory(owner=user, content="Wears glasses.")
    html = browser.get("/settings/memory/").content.decode()
    section = html[html.index('id="memory-suggested"') : html.index('id="memory-active-title"')]
    assert "Is diabetic." in section and "Sensitive" in section and "data-suggested-count>1<" in section
    assert "Wears glasses." not in section


def test_keep_on_the_page_makes_it_active_and_rerenders_the_sections(browser: Client, user: User) -> None:
    suggestion = make_memory(owner=user, content="Is diabetic.", suggested=True, sensitive=True)
    response = browser.post(f"/settings/memory/{suggestion.pk}/keep/", **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="memory-suggested"' in html and 'id="memory-list"' in html and "Kept." in html
    assert list(memories_active(user_id=user.pk).values_list("content", flat=True)) == ["Is diabetic."]


def test_discard_on_the_page_deletes_the_suggestion(browser: Client, user: User) -> None:
    suggestion = make_memory(owner=user, content="Is diabetic.", suggested=True)
    assert browser.post(f"/settings/memory/{suggestion.pk}/discard/", **HX).status_code == 200
    assert not Memory.objects.filter(pk=suggestion.pk).exists()
    active = make_memory(owner=user, content="Wears glasses.")
    assert browser.post(f"/settings/memory/{active.pk}/discard/", **HX).status_code == 409  # not a suggestion


def test_keep_and_discard_from_the_notice_answer_in_place(browser: Client, user: User) -> None:
    kept = make_memory(owner=user, content="Is diabetic.", suggested=True)
    dropped = make_memory(owner=user, content="Is pregnant.", suggested=True)
    html = browser.post(f"/settings/memory/{kept.pk}/keep/?from=notice", **HX).content.decode()
    assert f'id="suggestion-{kept.pk}"' in html and "Kept" in html
    html = browser.post(f"/settings/memory/{dropped.pk}/discard/?from=notice", **HX).content.decode()
    assert f'id="suggestion-{dropped.pk}"' in html and "Discarded" in html


def test_without_javascript_keep_redirects_to_the_memory(browser: Client, user: User) -> None:
    suggestion = make_memory(owner=user, content="Is diabetic.", suggested=True)
    response = browser.post(f"/settings/memory/{suggestion.pk}/keep/")
    assert response.status_code == 302 and response["Location"].endswith(f"#memory-{suggestion.pk}")


@pytest.mark.parametrize("action", ["keep", "discard", "pin", "expiry"])
def test_another_users_memory_is_a_404(browser: Client, other_user: User, action: str) -> None:
    theirs = make_memory(owner=other_user, content="Is diabetic.", suggested=True)
    assert browser.post(f"/settings/memory/{theirs.pk}/{action}/", {"pinned": "on"}, **HX).status_code == 404
    assert Memory.objects.get(pk=theirs.pk).suggested and not Memory.objects.get(pk=theirs.pk).pinned


def test_pin_and_unpin_a_row(browser: Client, user: User) -> None:
    memory = make_memory(owner=user, content="Allergic to peanuts.")
    html = browser.post(f"/settings/memory/{memory.pk}/pin/", {"pinned": "on"}, **HX).content.decode()
    assert Memory.objects.get(pk=memory.pk).pinned and "Unpin" in html and "Pinned" in html
    browser.post(f"/settings/memory/{memory.pk}/pin/", {"pinned": "off"}, **HX)
    assert not Memory.objects.get(pk=memory.pk).pinned


def test_set_change_and_clear_an_end_date_on_a_row(browser: Client, user: User) -> None:
    memory = make_memory(owner=user, content="Is in Tokyo.")
    later = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    html = browser.post(f"/settings/memory/{memory.pk}/expiry/", {"expires_at": later}, **HX).content.decode()
    assert Memory.objects.get(pk=memory.pk).expires_at is not None and "Until" in html
    past = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = browser.post(f"/settings/memory/{memory.pk}/expiry/", {"expires_at": past}, **HX)
    # Refused in place: the row again, the form open, the error beside the field, what was typed kept.
    html = response.content.decode()
    assert response.status_code == 422 and f'id="memory-{memory.pk}-expires-error"' in html and "future" in html
    assert 'aria-invalid="true"' in html and f'value="{past}"' in html
    bad = browser.post(f"/settings/memory/{memory.pk}/expiry/", {"expires_at": "Friday"}, **HX)
    assert bad.status_code == 422 and "date and time" in bad.content.decode()
    browser.post(f"/settings/memory/{memory.pk}/expiry/", {"clear": "1"}, **HX)
    assert Memory.objects.get(pk=memory.pk).expires_at is None


def test_the_review_setting_is_saved(browser: Client, user: User) -> None:
    html = browser.get("/settings/memory/").content.decode()
    assert 'name="memory_review" value="sensitive" checked' in html
    assert browser.post("/settings/memory/review/", {"memory_review": "all"}, **HX).status_code == 200
    user.refresh_from_db()
    assert user.memory_review == "all"
    assert browser.post("/settings/memory/review/", {"memory_review": "never"}, **HX).status_code == 400


def test_a_suggestion_run_notices_with_keep_and_discard_and_marks_the_conversation(
    fake_model: Any, user: User, conversation: Any, django_capture_on_commit_callbacks: Any
) -> None:
    message = say(conversation, "I'm diabetic, what's a good breakfast?")
    fake_model.judge({"operations": [{"op": "add", "content": "Is diabetic.", "sources": [1]}]})
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)

    suggestion = Memory.objects.get(owner=user, suggested=True)
    marker = ConversationMarker.objects.get(conversation=conversation)
    assert marker.text == "Memora would like to remember “Is diabetic.”"
    assert marker.link.endswith(f"#memory-{suggestion.pk}")
    [notice], _ = notices.notices_after(user=user, after_run_id=0)
    assert "Memora would like to remember “Is diabetic.”" in notice
    assert (
        f"/settings/memory/{suggestion.pk}/keep/" in notice and f"/settings/memory/{suggestion.pk}/discard/" in notice
    )


def test_the_poll_brings_the_open_conversations_new_markers(
    browser: Client, fake_model: Any, user: User, conversation: Any, django_capture_on_commit_callbacks: Any
) -> None:
    other = make_conversation(owner=user)
    before = notice_selectors.memory_marker_last_id(conversation_id=str(conversation.pk))
    message = say(conversation, "I wear glasses.")
    fake_model.judge({"operations": [{"op": "add", "content": "Wears glasses.", "sources": [1]}]})
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)

    url = f"/settings/memory/notices/?after=0&conversation={conversation.pk}&marker={before}"
    html = browser.get(url, **HX).content.decode()
    marker = ConversationMarker.objects.get(conversation=conversation)
    assert f'id="marker-{marker.pk}"' in html and 'hx-swap-oob="beforeend:#messages"' in html
    assert f"marker={marker.pk}" in html  # the next poll asks from there
    html = browser.get(f"/settings/memory/notices/?after=0&conversation={other.pk}&marker=0", **HX).content.decode()
    assert "marker-" not in html


def test_a_run_that_changed_several_memories_links_to_all_of_them(
    browser: Client, fake_model: Any, user: User, conversation: Any, django_capture_on_commit_callbacks: Any
) -> None:
    message = say(conversation, "I wear glasses and I'm left-handed.")
    adds = [{"op": "add", "content": c, "sources": [1]} for c in ("Wears glasses.", "Is left-handed.")]
    fake_model.judge({"operations": adds})
    with django_capture_on_commit_callbacks(execute=True):
        run(user, up_to=message)

    ids = list(Memory.objects.filter(owner=user).order_by("id").values_list("pk", flat=True))
    link = ConversationMarker.objects.get(conversation=conversation).link
    assert link == f"/settings/memory/?review={ids[0]},{ids[1]}#memory-{ids[0]}"
    html = browser.get(link.split("#")[0]).content.decode()
    assert html.count("is-reviewed") == 2


def test_the_run_record_of_a_suggestion_says_it_waits(fake_model: Any, user: User, conversation: Any) -> None:
    message = say(conversation, "I'm diabetic.")
    fake_model.judge({"operations": [{"op": "add", "content": "Is diabetic.", "sources": [1]}]})
    run(user, up_to=message)
    [applied] = ExtractionRun.objects.get(owner=user).applied_ops
    assert applied["suggested"] is True and applied["sensitive"] is True
