"""Projects (SPEC §9): the routes, ownership, bad input, and conversations in projects. Runs without the memory
app too: chat owns projects and their conversations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat import extensions
from chat.extensions import TurnContext
from chat.models import Conversation, Project
from chat.projects import project_create, project_end
from chat.services import conversation_create
from chat.turn.model_input import build_model_input
from tests.helpers import make_message

pytestmark = pytest.mark.django_db

JSON = "application/json"


def send(client: Client, method: str, path: str, body: Any = None) -> Any:
    data = body if isinstance(body, str) else json.dumps(body) if body is not None else ""
    return getattr(client, method.lower())(path, data, content_type=JSON)


def test_a_project_is_created_listed_changed_and_read_back(api_client: Client, user: User) -> None:
    created = send(api_client, "POST", "/api/projects", {"name": " Thesis ", "instructions": "Cite sources."})
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"id", "name", "instructions", "memory_mode", "created_at"}
    assert (body["name"], body["instructions"], body["memory_mode"]) == ("Thesis", "Cite sources.", "shared")

    changed = send(api_client, "PATCH", f"/api/projects/{body['id']}", {"memory_mode": "isolated"})
    assert changed.status_code == 200
    assert (changed.json()["memory_mode"], changed.json()["name"]) == ("isolated", "Thesis")
    assert [p["name"] for p in api_client.get("/api/projects").json()] == ["Thesis"]
    assert api_client.get(f"/api/projects/{body['id']}").json()["memory_mode"] == "isolated"


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"name": ""}, "at least 1"),
        ({"name": "   "}, "must not be blank"),
        ({"name": "x" * 101}, "at most 100"),
        ({"name": "A", "instructions": "x" * 2001}, "at most 2000"),
        ({"name": "A", "memory_mode": "sometimes"}, "shared"),
        ({"name": "A", "colour": "red"}, "Extra inputs"),
    ],
)
def test_a_project_with_bad_input_answers_422_and_writes_nothing(api_client: Client, body: Any, expected: str) -> None:
    response = send(api_client, "POST", "/api/projects", body)
    assert response.status_code == 422
    assert expected.lower() in response.json()["detail"].lower()
    assert Project.objects.count() == 0


def test_a_patch_with_a_null_name_answers_422(api_client: Client, user: User) -> None:
    project = project_create(user=user, name="Trip")
    response = send(api_client, "PATCH", f"/api/projects/{project.pk}", {"name": None})
    assert response.status_code == 422
    project.refresh_from_db()
    assert project.name == "Trip"


def test_another_users_project_answers_404_everywhere(api_client: Client, other_user: User) -> None:
    theirs = project_create(user=other_user, name="Secret client")
    for method, path, body in [
        ("GET", f"/api/projects/{theirs.pk}", None),
        ("PATCH", f"/api/projects/{theirs.pk}", {"name": "Mine now"}),
        ("DELETE", f"/api/projects/{theirs.pk}", None),
        ("POST", "/api/conversations", {"project_id": theirs.pk}),
        ("GET", f"/api/conversations?project={theirs.pk}", None),
    ]:
        response = send(api_client, method, path, body)
        assert response.status_code == 404, (method, path)
        assert response.json() == {"detail": "Not Found"}
    assert api_client.get("/api/projects").json() == []
    theirs.refresh_from_db()
    assert theirs.name == "Secret client"
    assert Conversation.objects.count() == 0


def test_a_conversation_is_started_in_a_project_moved_out_and_filtered(api_client: Client, user: User) -> None:
    project = project_create(user=user, name="Trip")
    outside = conversation_create(user=user, title="Elsewhere")
    created = send(api_client, "POST", "/api/conversations", {"title": "Flights", "project_id": project.pk})
    assert created.status_code == 201 and created.json()["project_id"] == project.pk

    listed = api_client.get(f"/api/conversations?project={project.pk}").json()
    assert [c["title"] for c in listed] == ["Flights"]
    assert [c["title"] for c in api_client.get("/api/conversations?project=none").json()] == ["Elsewhere"]

    moved = send(api_client, "PATCH", f"/api/conversations/{outside.pk}", {"project_id": project.pk})
    assert moved.status_code == 200 and moved.json()["project_id"] == project.pk
    assert moved.json()["title"] == "Elsewhere"
    out = send(api_client, "PATCH", f"/api/conversations/{created.json()['id']}", {"project_id": None})
    assert out.json()["project_id"] is None
    assert api_client.get("/api/conversations?project=abc").status_code == 422


def test_ending_a_project_with_move_keeps_its_conversations_outside_any(api_client: Client, user: User) -> None:
    project = project_create(user=user, name="Trip")
    kept = conversation_create(user=user, project=project)
    response = api_client.delete(f"/api/projects/{project.pk}")
    assert response.status_code == 204
    kept.refresh_from_db()
    assert kept.project_id is None
    assert not Project.objects.exists()


def test_ending_a_project_with_delete_deletes_its_conversations(api_client: Client, user: User) -> None:
    project = project_create(user=user, name="Client")
    inside = conversation_create(user=user, project=project)
    make_message(conversation=inside, content="The client's server runs PostgreSQL 16.")
    outside = conversation_create(user=user)
    response = api_client.delete(f"/api/projects/{project.pk}?memories=delete")
    assert response.status_code == 204
    assert list(Conversation.objects.values_list("pk", flat=True)) == [outside.pk]
    assert api_client.delete(f"/api/projects/{project.pk}?memories=keep").status_code == 422


def test_project_enders_are_told_how_the_project_ends(user: User) -> None:
    project = project_create(user=user, name="Thesis")
    project_id = project.pk
    seen: list[extensions.ProjectEnding] = []
    with extensions.project_enders_registered("test", seen.append):
        project_end(project=project, memories="delete")
    assert seen == [extensions.ProjectEnding(user_id=user.pk, project_id=project_id, memories="delete")]


def test_a_projects_instructions_are_sent_with_each_turn_beside_the_system_prompt(user: User) -> None:
    project = project_create(user=user, name="Thesis", instructions="Use British spelling.")
    conversation = conversation_create(user=user, project=project)
    message = make_message(conversation=conversation, content="Hello")
    system = build_model_input(TurnContext(user=user, conversation=conversation, user_message=message), [])[0]
    assert 'project "Thesis"' in system["content"] and "Use British spelling." in system["content"]

    elsewhere = conversation_create(user=user)
    other = make_message(conversation=elsewhere, content="Hello")
    plain = build_model_input(TurnContext(user=user, conversation=elsewhere, user_message=other), [])[0]
    assert "Use British spelling." not in plain["content"]
