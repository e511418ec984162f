from __future__ import annotations

import json
from typing import Any

import pytest
from django.utils import timezone

from memory.models import Memory, MemorySource
from tests.helpers import make_memory, say

pytestmark = pytest.mark.django_db


def body(content: Any) -> dict[str, Any]:
    return {"data": json.dumps({"content": content}), "content_type": "application/json"}


@pytest.fixture
def sourced(user: Any, conversation: Any) -> Memory:
    message = say(conversation, "I've always liked small phones, they're easy to use one-handed.")
    memory = make_memory(owner=user, content="Prefers small phones.")
    MemorySource.objects.create(memory=memory, message=message)
    return memory


def test_list_returns_the_public_shape_with_sources(api_client: Any, sourced: Memory) -> None:
    response = api_client.get("/api/memories")

    assert response.status_code == 200
    [item] = response.json()
    message = sourced.sources.get()
    assert item == {
        "id": sourced.pk,
        "content": "Prefers small phones.",
        "origin": "extracted",
        "created_at": item["created_at"],
        "invalid_at": None,
        "invalid_reason": "",
        "supersedes": None,
        "superseded_by": None,
        "sources": [
            {"message_id": message.pk, "conversation_id": str(message.conversation_id), "excerpt": message.content}
        ],
        "status": "active",
        "pinned": False,
        "key": "",
        "sensitive": False,
        "expires_at": None,
        "last_used_at": None,
        "project_id": None,
        "client": "",
        "merged_from": [],
    }


def test_list_filters_by_status(api_client: Any, user: Any) -> None:
    make_memory(owner=user, content="Active.")
    make_memory(owner=user, content="Old.", invalid_at=timezone.now(), invalid_reason="retracted")

    def contents(status: str) -> list[str]:
        return [m["content"] for m in api_client.get(f"/api/memories?status={status}").json()]

    assert contents("active") == ["Active."]
    assert contents("invalid") == ["Old."]
    assert sorted(contents("all")) == ["Active.", "Old."]
    assert api_client.get("/api/memories?status=deleted").status_code == 422


def test_list_query_count_does_not_grow(
    api_client: Any, user: Any, conversation: Any, django_assert_max_num_queries: Any
) -> None:
    for i in range(30):
        memory = make_memory(owner=user, content=f"Fact {i}.")
        MemorySource.objects.create(memory=memory, message=say(conversation, f"Message {i}"))
    # auth (token lookup + last-used update) + memories + their sources
    with django_assert_max_num_queries(4):
        response = api_client.get("/api/memories?status=all")
    assert len(response.json()) == 30
    with django_assert_max_num_queries(4):
        assert len(api_client.get("/api/memories/export").json()["memories"]) == 30


def test_add_creates_a_user_memory_and_leaves_pending_messages_for_review(
    api_client: Any, user: Any, conversation: Any
) -> None:
    backlog = say(conversation, "I like small phones")

    response = api_client.post("/api/memories", **body("  Is vegetarian.  "))

    assert response.status_code == 201
    assert response.json()["content"] == "Is vegetarian." and response.json()["origin"] == "user"
    backlog.refresh_from_db()
    assert backlog.memory_status == "pending"  # adding contradicts nothing: the backlog is still reviewed


@pytest.mark.parametrize(
    ("content", "status", "detail"),
    [("", 422, "at least 1 character"), ("   ", 422, "blank"), ("x" * 501, 422, "at most 500"), (5, 422, None)],
)
def test_add_rejects_bad_input_and_writes_nothing(
    api_client: Any, content: Any, status: int, detail: str | None
) -> None:
    response = api_client.post("/api/memories", **body(content))
    assert response.status_code == status
    if detail:
        assert detail in response.json()["detail"]
    assert not Memory.objects.exists()


def test_add_rejects_malformed_json(api_client: Any) -> None:
    response = api_client.post("/api/memories", data="{not json", content_type="application/json")
    assert 400 <= response.status_code < 500
    assert not Memory.objects.exists()


def test_add_rejects_a_duplicate_of_an_active_memory(api_client: Any, user: Any) -> None:
    make_memory(owner=user, content="Is vegetarian.")
    response = api_client.post("/api/memories", **body("Is vegetarian."))
    assert response.status_code == 409
    assert Memory.objects.count() == 1


def test_get_returns_one_memory(api_client: Any, sourced: Memory) -> None:
    response = api_client.get(f"/api/memories/{sourced.pk}")
    assert response.status_code == 200 and response.json()["id"] == sourced.pk


def test_edit_returns_the_new_version_and_keeps_the_old_in_history(api_client: Any, sourced: Memory) -> None:
    response = api_client.patch(f"/api/memories/{sourced.pk}", **body("Prefers large-screen phones."))

    assert response.status_code == 200
    new = response.json()
    assert new["content"] == "Prefers large-screen phones." and new["supersedes"] == sourced.pk
    assert new["sources"] == api_client.get(f"/api/memories/{sourced.pk}").json()["sources"]
    old = api_client.get(f"/api/memories/{sourced.pk}").json()
    assert old["invalid_reason"] == "edited" and old["superseded_by"] == new["id"]


def test_edit_of_an_invalid_memory_is_a_conflict(api_client: Any, user: Any) -> None:
    old = make_memory(owner=user, content="Old.", invalid_at=timezone.now(), invalid_reason="retracted")
    response = api_client.patch(f"/api/memories/{old.pk}", **body("New."))
    assert response.status_code == 409
    assert Memory.objects.count() == 1


def test_edit_with_blank_content_writes_nothing(api_client: Any, sourced: Memory) -> None:
    response = api_client.patch(f"/api/memories/{sourced.pk}", **body(" "))
    assert response.status_code == 422
    assert Memory.objects.count() == 1


def test_delete_removes_the_memory_and_its_earlier_versions(api_client: Any, sourced: Memory, user: Any) -> None:
    newer = api_client.patch(f"/api/memories/{sourced.pk}", **body("Prefers large-screen phones.")).json()
    unrelated = make_memory(owner=user, content="Wears glasses.")

    response = api_client.delete(f"/api/memories/{newer['id']}")

    assert response.status_code == 204
    assert list(Memory.objects.values_list("pk", flat=True)) == [unrelated.pk]


def test_restore_makes_an_old_version_active_and_replaces_its_successor(api_client: Any, sourced: Memory) -> None:
    newer = api_client.patch(f"/api/memories/{sourced.pk}", **body("Prefers large-screen phones.")).json()

    response = api_client.post(f"/api/memories/{sourced.pk}/restore")

    assert response.status_code == 201
    restored = response.json()
    assert restored["content"] == "Prefers small phones." and restored["origin"] == "restored"
    assert restored["supersedes"] == newer["id"]
    active = [m["content"] for m in api_client.get("/api/memories").json()]
    assert active == ["Prefers small phones."]
    assert api_client.post(f"/api/memories/{restored['id']}/restore").status_code == 409


def test_forget_everything_invalidates_or_purges(api_client: Any, user: Any) -> None:
    make_memory(owner=user, content="A.")
    make_memory(owner=user, content="B.")

    assert api_client.delete("/api/memories").json() == {"forgotten": 2, "purged": False}
    assert api_client.get("/api/memories").json() == []
    assert len(api_client.get("/api/memories?status=invalid").json()) == 2
    assert api_client.delete("/api/memories?purge=true").json() == {"forgotten": 2, "purged": True}
    assert not Memory.objects.exists()


def test_export_has_history_and_sources(api_client: Any, sourced: Memory) -> None:
    api_client.patch(f"/api/memories/{sourced.pk}", **body("Prefers large-screen phones."))

    data = api_client.get("/api/memories/export").json()

    assert data["user"] == "alice" and data["active"] == 1
    assert [m["content"] for m in data["memories"]] == ["Prefers small phones.", "Prefers large-screen phones."]
    assert all(m["sources"] for m in data["memories"])


def test_anonymous_requests_are_refused(client: Any) -> None:
    assert client.get("/api/memories").status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("get", "/api/memories/{id}", None),
        ("patch", "/api/memories/{id}", {"content": "Mine now."}),
        ("delete", "/api/memories/{id}", None),
        ("post", "/api/memories/{id}/restore", None),
    ],
)
def test_another_users_memory_is_404(api_client: Any, other_user: Any, method: str, path: str, payload: Any) -> None:
    theirs = make_memory(
        owner=other_user, content="Mallory's secret.", invalid_at=timezone.now() if "restore" in path else None
    )
    kwargs = {"data": json.dumps(payload), "content_type": "application/json"} if payload else {}

    response = getattr(api_client, method)(path.format(id=theirs.pk), **kwargs)

    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.content == "Mallory's secret." and Memory.objects.count() == 1


def test_another_users_memories_never_appear_in_lists_export_or_forget_all(api_client: Any, other_user: Any) -> None:
    make_memory(owner=other_user, content="Mallory's secret.")
    assert api_client.get("/api/memories?status=all").json() == []
    assert api_client.get("/api/memories/export").json()["memories"] == []
    assert api_client.delete("/api/memories?purge=true").json()["forgotten"] == 0
    assert Memory.objects.filter(owner=other_user, invalid_at__isnull=True).count() == 1


def test_unknown_id_is_404(api_client: Any) -> None:
    assert api_client.get("/api/memories/999999").status_code == 404
