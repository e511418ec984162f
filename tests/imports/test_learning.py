from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chat.models import Conversation, Message
from imports import learning
from imports.models import ChatImport
from memory.models import ExtractionRun, Memory, MemorySource
from tests.imports import exports
from tests.scan import scan_for

pytestmark = pytest.mark.django_db

PHONE = "I've always liked small phones, they're easy to use one-handed."


def _phone_export() -> bytes:
    chat = exports.gpt_conversation(
        "c-small",
        "Phones",
        [
            ("root", None, None),
            ("u1", "root", exports.gpt_message("u1", "user", [PHONE], at=exports.T0 + 10)),
            ("a1", "u1", exports.gpt_message("a1", "assistant", ["Noted: small phones."], at=exports.T0 + 20)),
            (
                "u2",
                "a1",
                exports.gpt_message("u2", "user", ["Please remember that I am vegetarian."], at=exports.T0 + 30),
            ),
        ],
        current="u2",
    )
    return exports.chatgpt_zip([chat])


def _learn_all(import_id: int) -> None:
    for _ in range(20):
        if learning.learn_step(import_id=import_id) in ("done", "stopped", "gone"):
            return
    raise AssertionError("learning did not finish")


@pytest.fixture
def imported(upload: Callable[..., Any], run_import: Callable[[int], str], user: Any) -> int:
    import_id = upload(_phone_export()).json()["id"]
    run_import(import_id)
    return import_id


def test_imported_messages_are_not_extracted_like_new_ones(imported: int, user: Any) -> None:
    assert not Message.objects.filter(user=user, memory_status="pending").exists()
    assert not Memory.objects.filter(owner=user).exists()


def test_learn_estimate_counts_user_messages_calls_and_characters(api_client: Any, imported: int) -> None:
    estimate = api_client.get(f"/api/imports/{imported}").json()["learn"]["estimate"]

    assert estimate == {
        "messages": 2,
        "judge_calls": 1,
        "characters": len(PHONE) + len("Please remember that I am vegetarian."),
    }


def test_demo_judge_proposes_the_phone_preference_as_a_suggestion_citing_the_imported_message(
    api_client: Any, imported: int, user: Any
) -> None:
    user.memory_review = "auto"  # suggestions whatever the setting says
    user.save()
    assert api_client.post(f"/api/imports/{imported}/learn").status_code == 202

    _learn_all(imported)

    memories = list(Memory.objects.filter(owner=user))
    assert memories, "the demo judge proposed nothing"
    assert all(m.suggested and m.origin == "imported" and m.invalid_at is None for m in memories)
    phone = next(m for m in memories if "small phones" in m.content.lower())
    source = MemorySource.objects.get(memory=phone).message
    assert source.content == PHONE
    assert Conversation.objects.get(pk=source.conversation_id).imported_id == "c-small"
    # "remember that" in an old chat is not a request made today: it waits like the rest.
    assert not Memory.objects.filter(owner=user, suggested=False).exists()
    body = api_client.get(f"/api/imports/{imported}").json()["learn"]
    assert body["status"] == "done" and body["done"] == 2 and body["suggested"] == len(memories)
    listed = api_client.get("/api/memories", {"status": "suggested"}).json()
    assert {m["origin"] for m in listed} == {"imported"}


def test_only_adds_are_taken_from_the_judge_and_nothing_is_active_until_kept(
    fake_model: Any, api_client: Any, imported: int, user: Any
) -> None:
    kept = Memory.objects.create(owner=user, content="Lives in Oslo.")
    fake_model.judge(
        {
            "operations": [
                {"op": "add", "content": "Prefers small phones for one-handed use.", "sources": [1]},
                {"op": "retract", "id": kept.pk},
                {"op": "add", "content": "My password is hunter2", "sources": [1]},
            ]
        }
    )
    api_client.post(f"/api/imports/{imported}/learn")

    _learn_all(imported)

    kept.refresh_from_db()
    assert kept.invalid_at is None  # an old chat does not retract what is true now
    [suggestion] = Memory.objects.filter(owner=user, suggested=True)
    assert suggestion.content == "Prefers small phones for one-handed use."
    run = ExtractionRun.objects.get(trigger="import")
    reasons = " ".join(d["reason"] for d in run.dropped_ops)
    assert "only proposes new memories" in reasons and "credential" in reasons
    assert api_client.post(f"/api/memories/{suggestion.pk}/confirm").status_code == 200


def test_stop_ends_the_pass_after_the_current_batch(api_client: Any, imported: int) -> None:
    api_client.post(f"/api/imports/{imported}/learn")
    api_client.post(f"/api/imports/{imported}/learn/stop")

    assert learning.learn_step(import_id=imported) == "stopped"
    assert api_client.get(f"/api/imports/{imported}").json()["learn"]["status"] == "stopped"


def test_learning_waits_for_the_import_and_memory(api_client: Any, upload: Callable[..., Any], user: Any) -> None:
    previewed = upload(_phone_export(), dry_run="true").json()["id"]
    assert api_client.post(f"/api/imports/{previewed}/learn").status_code == 409
    ChatImport.objects.filter(pk=previewed).update(status="done")
    user.memory_enabled = False
    user.save()
    response = api_client.post(f"/api/imports/{previewed}/learn")
    assert response.status_code == 409
    assert "Memory is switched off" in response.json()["detail"]


def test_remove_deletes_what_was_learned_with_the_conversations(api_client: Any, imported: int, user: Any) -> None:
    api_client.post(f"/api/imports/{imported}/learn")
    _learn_all(imported)
    suggestion = Memory.objects.filter(owner=user).first()
    assert suggestion is not None
    api_client.post(f"/api/memories/{suggestion.pk}/confirm")
    texts = [PHONE, "Noted: small phones.", "Phones", *Memory.objects.values_list("content", flat=True)]

    removed = api_client.delete(f"/api/imports/{imported}").json()

    assert removed["memories"] >= 1
    assert not Memory.objects.filter(owner=user).exists()
    assert {text: scan_for(text) for text in texts} == {text: [] for text in texts}
