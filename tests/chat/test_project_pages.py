"""The project pages (SPEC §9): list and create, a project's page (change it), end it, start a conversation in
it, move a conversation; the sidebar groups conversations under their project; another user's project is a
404 on every page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from chat.models import Conversation, Project
from chat.projects import project_create
from chat.services import conversation_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def test_a_project_is_created_changed_and_ended_from_its_pages(alice: Client, user: Any) -> None:
    created = alice.post("/projects/", {"name": "Thesis", "instructions": "Cite sources.", "memory_mode": "shared"})
    project = Project.objects.get(owner=user)
    assert created.status_code == 302 and created["Location"] == f"/projects/{project.pk}/"
    page = alice.get(f"/projects/{project.pk}/").content.decode()
    assert "Thesis" in page and "Cite sources." in page and "New conversation in this project" in page

    changed = alice.post(f"/projects/{project.pk}/", {"name": "Thesis", "memory_mode": "isolated"})
    assert changed.status_code == 200
    project.refresh_from_db()
    assert (project.memory_mode, project.instructions) == ("isolated", "")

    kept = conversation_create(user=user, project=project)
    assert alice.post(f"/projects/{project.pk}/end/", {"memories": "move"}).status_code == 302
    kept.refresh_from_db()
    assert kept.project_id is None and not Project.objects.exists()


def test_a_project_with_a_bad_name_says_so_and_writes_nothing(alice: Client) -> None:
    response = alice.post("/projects/", {"name": "", "memory_mode": "shared"})
    assert response.status_code == 400 and 'aria-invalid="true"' in response.content.decode()
    assert not Project.objects.exists()


def test_a_conversation_is_started_in_a_project_and_moved_out(alice: Client, user: Any) -> None:
    project = project_create(user=user, name="Trip")
    start = alice.get(f"/projects/{project.pk}/new/")
    assert start["Location"] == f"/?project={project.pk}"
    assert "selected>Trip</option>" in alice.get(start["Location"]).content.decode()
    alice.post("/c/new/", {"message": "Plan day one", "project": project.pk})
    conversation = Conversation.objects.get(owner=user)
    assert conversation.project_id == project.pk
    alice.post(f"/c/{conversation.pk}/project/", {"project": ""})
    conversation.refresh_from_db()
    assert conversation.project_id is None


def test_the_sidebar_groups_conversations_under_their_project(alice: Client, user: Any) -> None:
    project = project_create(user=user, name="Thesis")
    conversation_create(user=user, title="Chapter one", project=project)
    conversation_create(user=user, title="Groceries")
    page = alice.get("/").content.decode()
    group = page[page.index(f'id="project-group-{project.pk}"') :]
    assert "Chapter one" in group.split('id="conversation-list"')[0]
    general = page[page.index('id="conversation-list"') :]
    assert "Groceries" in general and "Chapter one" not in general


def test_another_users_project_is_a_404_on_every_page(alice: Client, other_user: Any, user: Any) -> None:
    theirs = project_create(user=other_user, name="Secret")
    mine = conversation_create(user=user)
    for method, url, data in [
        ("get", f"/projects/{theirs.pk}/", None),
        ("post", f"/projects/{theirs.pk}/", {"name": "Mine now", "memory_mode": "off"}),
        ("get", f"/projects/{theirs.pk}/end/", None),
        ("post", f"/projects/{theirs.pk}/end/", {"memories": "delete"}),
        ("get", f"/projects/{theirs.pk}/new/", None),
        ("post", f"/c/{mine.pk}/project/", {"project": theirs.pk}),
        ("post", "/c/new/", {"message": "Hi", "project": theirs.pk}),
    ]:
        response = getattr(alice, method)(url, data) if data else getattr(alice, method)(url)
        assert response.status_code == 404, url
    theirs.refresh_from_db()
    assert theirs.name == "Secret" and Project.objects.filter(pk=theirs.pk).exists()
    assert "Secret" not in alice.get("/").content.decode()
