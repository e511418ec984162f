"""Memory with a scope (SPEC §9 "Projects"): which memories a conversation may use, keyed values per scope,
moving a memory, and what ending a project does with its memories."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.extensions import TurnContext
from chat.models import Conversation, Project
from chat.projects import project_create, project_end
from chat.services import conversation_create
from memory import moves, services
from memory.context import memory_block
from memory.models import Memory, MemoryKey
from memory.scopes import ScopeView, memories_for_conversation, memories_for_scope
from memory.selectors import memory_rows_for_turn
from tests.helpers import make_memory, make_message
from tests.scan import scan_for

pytestmark = pytest.mark.django_db

FIELDS = ("id", "content", "pinned", "key", "expires_at", "project", "created_at")


def contents(rows: Any) -> set[str]:
    return {m.content for m in rows}


@pytest.fixture
def layers(user: User, other_user: User) -> dict[str, Project]:
    """The user's general memories, two projects' own, and another user's."""
    thesis = project_create(user=user, name="Thesis")
    client = project_create(user=user, name="Client", memory_mode=Project.MemoryMode.ISOLATED)
    make_memory(owner=user, content="Lives in Lyon.")
    make_memory(owner=user, content="Answers in detail.", key=MemoryKey.ANSWER_LENGTH)
    make_memory(owner=user, content="The thesis is due in June.", project=thesis)
    make_memory(owner=user, content="Answer briefly in the thesis.", key=MemoryKey.ANSWER_LENGTH, project=thesis)
    make_memory(owner=user, content="The client uses PostgreSQL 16.", project=client)
    make_memory(owner=other_user, content="Someone else's fact.")
    return {"thesis": thesis, "client": client}


def test_outside_projects_a_chat_uses_only_the_users_own_memories(user: User, layers: dict[str, Project]) -> None:
    assert contents(memories_for_scope(user_id=user.pk, view=ScopeView())) == {"Lives in Lyon.", "Answers in detail."}


def test_a_shared_project_uses_the_users_and_its_own_and_its_keyed_value_wins(
    user: User, layers: dict[str, Project]
) -> None:
    got = contents(memories_for_scope(user_id=user.pk, view=ScopeView.of(layers["thesis"])))
    assert got == {"Lives in Lyon.", "The thesis is due in June.", "Answer briefly in the thesis."}


def test_an_isolated_project_uses_only_its_own(user: User, layers: dict[str, Project]) -> None:
    got = contents(memories_for_scope(user_id=user.pk, view=ScopeView.of(layers["client"])))
    assert got == {"The client uses PostgreSQL 16."}


def test_a_project_with_memory_off_uses_none(user: User, layers: dict[str, Project]) -> None:
    off = project_create(user=user, name="Scratch", memory_mode=Project.MemoryMode.OFF)
    make_memory(owner=user, content="A scratch fact.", project=off)
    assert list(memories_for_scope(user_id=user.pk, view=ScopeView.of(off))) == []
    temporary = conversation_create(user=user, temporary=True, project=layers["thesis"])
    assert list(memories_for_conversation(user_id=user.pk, conversation=temporary)) == []


@pytest.mark.parametrize("which", [None, "thesis", "client"])
def test_the_turns_sql_read_gives_what_the_selector_gives(user: User, layers: dict[str, Project], which: Any) -> None:
    view = ScopeView.of(layers[which] if which else None)
    rows = memory_rows_for_turn(user_id=user.pk, project_id=view.project_id, with_user=view.reads_user)
    assert rows == list(memories_for_scope(user_id=user.pk, view=view).values_list(*FIELDS))


def block_of(user: User, conversation: Conversation, text: str) -> str:
    message = make_message(conversation=conversation, content=text)
    return memory_block(TurnContext(user=user, conversation=conversation, user_message=message)) or ""


def test_each_chats_block_carries_only_its_layers(user: User, layers: dict[str, Project]) -> None:
    text = "Lyon thesis June client PostgreSQL fact"
    outside = block_of(user, conversation_create(user=user), text)
    shared = block_of(user, conversation_create(user=user, project=layers["thesis"]), text)
    isolated = block_of(user, conversation_create(user=user, project=layers["client"]), text)

    assert "Lives in Lyon." in outside and "Answers in detail." in outside
    assert "thesis" not in outside and "PostgreSQL" not in outside
    assert "Lives in Lyon." in shared and "due in June" in shared and "Answer briefly" in shared
    assert "Answers in detail." not in shared and "PostgreSQL" not in shared
    assert "PostgreSQL 16" in isolated
    assert "Lyon" not in isolated and "thesis" not in isolated and "Answers in detail" not in isolated
    assert "Someone else" not in outside + shared + isolated


def test_keyed_values_are_unique_per_scope_by_the_database(user: User, layers: dict[str, Project]) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_memory(owner=user, content="Very short answers.", key=MemoryKey.ANSWER_LENGTH, project=layers["thesis"])
    make_memory(
        owner=user, content="Short answers for the client.", key=MemoryKey.ANSWER_LENGTH, project=layers["client"]
    )


def test_a_sentence_may_be_held_by_the_user_and_by_a_project(user: User, layers: dict[str, Project]) -> None:
    services.memory_add(user=user, content="Lives in Lyon.", project=layers["thesis"])
    with pytest.raises(services.MemoryConflict):
        services.memory_add(user=user, content="Lives in Lyon.")


def test_moving_a_memory_keeps_the_old_scope_in_history_and_restoring_brings_it_back(
    user: User, layers: dict[str, Project]
) -> None:
    fact = Memory.objects.get(content="Lives in Lyon.")
    moved = moves.memory_move(user=user, memory=fact, project=layers["thesis"])
    fact.refresh_from_db()
    assert (moved.project_id, moved.content) == (layers["thesis"].pk, "Lives in Lyon.")
    assert (fact.invalid_reason, fact.superseded_by_id, fact.project_id) == ("moved", moved.pk, None)

    restored = services.memory_restore(user=user, memory=fact)
    assert restored.project_id is None and restored.invalid_at is None
    moved.refresh_from_db()
    assert moved.invalid_at is not None


def test_a_moved_keyed_value_replaces_the_one_held_where_it_arrives(user: User, layers: dict[str, Project]) -> None:
    brief = Memory.objects.get(content="Answer briefly in the thesis.")
    moved = moves.memory_move(user=user, memory=brief, project=None)
    detailed = Memory.objects.get(content="Answers in detail.")
    assert detailed.invalid_reason == "replaced"
    assert moved.key == MemoryKey.ANSWER_LENGTH and moved.project_id is None


def test_ending_a_project_with_move_makes_its_memories_the_users_with_history(
    user: User, layers: dict[str, Project]
) -> None:
    thesis = layers["thesis"]
    due = Memory.objects.get(content="The thesis is due in June.")
    edited = services.memory_edit(user=user, memory=due, content="The thesis is due in July.")
    project_end(project=thesis, memories="move")

    edited.refresh_from_db()
    due.refresh_from_db()
    assert edited.project_id is None and edited.invalid_at is None
    assert due.project_id is None and due.superseded_by_id == edited.pk  # its history came along
    brief = Memory.objects.get(content="Answer briefly in the thesis.")
    assert brief.invalid_reason == "moved"  # the user's own value of the key stays the active one
    assert Memory.objects.get(content="Answers in detail.").invalid_at is None


def test_ending_a_project_with_delete_leaves_no_copy_of_its_memories_or_conversations(
    user: User, layers: dict[str, Project]
) -> None:
    client = layers["client"]
    chat = conversation_create(user=user, project=client)
    make_message(conversation=chat, content="Our client runs a Kafka cluster in Frankfurt.")
    kafka = make_memory(owner=user, content="The client runs Kafka in Frankfurt.", project=client)
    old = Memory.objects.get(content="The client uses PostgreSQL 16.")
    services.memory_edit(user=user, memory=old, content="The client uses PostgreSQL 17.")
    assert kafka.pk

    project_end(project=client, memories="delete")

    for text in ("Kafka", "PostgreSQL 16", "PostgreSQL 17", "Frankfurt"):
        assert scan_for(text) == [], text
    assert Memory.objects.filter(content="Lives in Lyon.").exists()


def test_the_api_lists_adds_and_moves_memories_by_scope(
    api_client: Client, user: User, layers: dict[str, Project]
) -> None:
    thesis = layers["thesis"]
    scoped = api_client.get(f"/api/memories?project={thesis.pk}").json()
    assert {m["content"] for m in scoped} == {"The thesis is due in June.", "Answer briefly in the thesis."}
    assert {m["project_id"] for m in scoped} == {thesis.pk}
    mine = api_client.get("/api/memories?project=user").json()
    assert {m["content"] for m in mine} == {"Lives in Lyon.", "Answers in detail."}

    body = json.dumps({"content": "Uses LaTeX.", "project_id": thesis.pk})
    added = api_client.post("/api/memories", body, content_type="application/json")
    assert added.status_code == 201 and added.json()["project_id"] == thesis.pk

    lyon = Memory.objects.get(content="Lives in Lyon.")
    patch = json.dumps({"project_id": thesis.pk})
    moved = api_client.patch(f"/api/memories/{lyon.pk}", patch, content_type="application/json")
    assert moved.status_code == 200
    assert moved.json()["project_id"] == thesis.pk and moved.json()["supersedes"] == lyon.pk


def test_another_users_project_answers_404_on_memory_routes(
    api_client: Client, user: User, other_user: User, layers: dict[str, Project]
) -> None:
    theirs = project_create(user=other_user, name="Theirs")
    lyon = Memory.objects.get(content="Lives in Lyon.")
    body = json.dumps({"content": "Sneaky.", "project_id": theirs.pk})
    assert api_client.post("/api/memories", body, content_type="application/json").status_code == 404
    patch = json.dumps({"project_id": theirs.pk})
    assert api_client.patch(f"/api/memories/{lyon.pk}", patch, content_type="application/json").status_code == 404
    assert api_client.get(f"/api/memories?project={theirs.pk}").status_code == 404
    lyon.refresh_from_db()
    assert lyon.invalid_at is None and lyon.project_id is None
    assert not Memory.objects.filter(content="Sneaky.").exists()
    assert timezone.now()


def test_deleting_the_account_deletes_its_projects_with_their_memories(user: User, layers: dict[str, Project]) -> None:
    from accounts.services import account_erase

    conversation_create(user=user, project=layers["thesis"])
    account_erase(user=user)
    assert not Project.objects.exists() and not Memory.objects.filter(owner_id=user.pk).exists()
    assert scan_for("The thesis is due in June.") == [] and scan_for("Thesis") == []


def test_a_deleted_projects_name_leaves_the_run_records(fake_model: Any, user: User) -> None:
    from tests.helpers import run, say

    client = project_create(user=user, name="Acme Rockets", memory_mode=Project.MemoryMode.ISOLATED)
    message = say(conversation_create(user=user, project=client), "The client ships on Fridays.")
    fake_model.judge({"operations": [{"op": "add", "content": "The client ships on Fridays.", "sources": [1]}]})
    run(user, up_to=message)
    assert scan_for("Acme Rockets") != []

    project_end(project=client, memories="delete")

    assert scan_for("Acme Rockets") == [] and scan_for("ships on Fridays") == []


def test_settings_memory_filters_by_scope_and_moves_a_memory(
    client: Client, user: User, layers: dict[str, Project]
) -> None:
    client.force_login(user)
    thesis = layers["thesis"]
    page = client.get(f"/settings/memory/?scope={thesis.pk}").content.decode()
    assert "The thesis is due in June." in page and "Lives in Lyon." not in page
    mine = client.get("/settings/memory/?scope=user").content.decode()
    assert "Lives in Lyon." in mine and "The thesis is due in June." not in mine and "about you" in mine

    lyon = Memory.objects.get(content="Lives in Lyon.")
    assert client.post(f"/settings/memory/{lyon.pk}/move/", {"scope": thesis.pk}).status_code == 302
    moved = Memory.objects.get(content="Lives in Lyon.", invalid_at__isnull=True)
    assert moved.project_id == thesis.pk
    lyon.refresh_from_db()
    assert lyon.invalid_reason == "moved"


def test_another_users_project_is_a_404_on_the_memory_pages(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    theirs = project_create(user=other_user, name="Theirs")
    mine = make_memory(owner=user, content="Lives in Lyon.")
    assert client.get(f"/settings/memory/?scope={theirs.pk}").status_code == 404
    assert client.post(f"/settings/memory/{mine.pk}/move/", {"scope": theirs.pk}).status_code == 404
    mine.refresh_from_db()
    assert mine.project_id is None and mine.invalid_at is None
