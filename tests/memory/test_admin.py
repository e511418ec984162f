from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from memory.models import ExtractionRun, Memory, MemoryUser
from memory.tasks import extract_memories_task
from tests.helpers import make_memory, make_user, run, say

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Any) -> Any:
    client.force_login(make_user(username="root", is_staff=True, is_superuser=True))
    return client


def test_admin_pages_show_memories_their_chain_and_runs(
    admin_client: Any, fake_model: Any, user: Any, conversation: Any
) -> None:
    old = make_memory(owner=user, content="Prefers small phones.")
    message = say(conversation, "I prefer big screens now")
    fake_model.judge(
        {"operations": [{"op": "update", "id": old.pk, "content": "Prefers large-screen phones.", "sources": [1]}]}
    )
    run(user, up_to=message)
    new = Memory.objects.get(invalid_at__isnull=True)
    extraction = ExtractionRun.objects.get()

    assert admin_client.get(reverse("admin:memory_memory_changelist") + "?state=active").status_code == 200
    page = admin_client.get(reverse("admin:memory_memory_change", args=[new.pk])).content.decode()
    assert "Prefers small phones." in page and "Prefers large-screen phones." in page and message.content in page
    listing = admin_client.get(reverse("admin:memory_extractionrun_changelist")).content.decode()
    assert "column-started" in listing and "column-duration" in listing and re.search(r"\d+( ms|\.\d s)<", listing)
    assert '<span title="Applied">Applied</span>' in listing
    page = admin_client.get(reverse("admin:memory_extractionrun_change", args=[extraction.pk])).content.decode()
    assert "I prefer big screens now" in page and "update" in page
    assert admin_client.get(reverse("admin:memory_memoryuser_changelist")).status_code == 200


def test_admin_action_schedules_extraction_for_selected_users(
    admin_client: Any, user: Any, conversation: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sent: list[Any] = []
    monkeypatch.setattr(extract_memories_task, "apply_async", lambda **kwargs: sent.append(kwargs))
    message = say(conversation, "I'm vegetarian")

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:memory_memoryuser_changelist"),
            {"action": "run_extraction_now", "_selected_action": [MemoryUser.objects.get(pk=user.pk).pk]},
        )

    assert response.status_code == 302
    assert [(c["args"], c["kwargs"]["min_pending"], c["kwargs"]["trigger"]) for c in sent] == [
        ((user.pk, message.pk), 1, "manual")
    ]


def test_extract_memories_command_runs_now(fake_model: Any, user: Any, conversation: Any, capsys: Any) -> None:
    say(conversation, "I'm vegetarian")
    fake_model.judge({"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]})

    call_command("extract_memories", "alice")

    assert "Remembered: Is vegetarian." in capsys.readouterr().out
    assert ExtractionRun.objects.get().trigger == "manual"
    with pytest.raises(CommandError):
        call_command("extract_memories", "nobody")
