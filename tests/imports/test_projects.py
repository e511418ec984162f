from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chat.models import Conversation, Project
from chat.services import conversation_create
from tests.imports import exports

pytestmark = pytest.mark.django_db


def _chatgpt_projects() -> bytes:
    return exports.chatgpt_zip(
        [
            exports.gpt_project_chat("p1", "g-p-aaa", "First chat of project A"),
            exports.gpt_project_chat("p2", "g-p-bbb", "A chat of project B"),
            exports.gpt_project_chat("p3", "g-p-aaa", "Second chat of project A"),
            exports.gpt_chinese(),
        ]
    )


def _projects_of(user: Any) -> dict[str, set[str]]:
    return {
        p.name: set(Conversation.objects.filter(project=p).values_list("imported_id", flat=True))
        for p in Project.objects.filter(owner=user)
    }


def test_chatgpt_project_chats_land_in_one_project_per_template_named_in_order(
    upload: Callable[..., Any], run_import: Callable[[int], str], user: Any
) -> None:
    run_import(upload(_chatgpt_projects()).json()["id"])

    assert _projects_of(user) == {"ChatGPT project 1": {"p1", "p3"}, "ChatGPT project 2": {"p2"}}
    assert Conversation.objects.get(owner=user, imported_id="c-zh").project is None


def test_claude_project_chat_lands_in_a_project_of_its_name(
    upload: Callable[..., Any], run_import: Callable[[int], str], user: Any
) -> None:
    conversations, projects = exports.claude_export()

    run_import(upload(exports.claude_zip(conversations, projects)).json()["id"])

    assert _projects_of(user) == {"River thesis": {"cl-1"}}


def test_reimport_uses_the_same_projects(
    upload: Callable[..., Any], run_import: Callable[[int], str], user: Any
) -> None:
    run_import(upload(_chatgpt_projects()).json()["id"])
    more = exports.chatgpt_zip([exports.gpt_project_chat("p4", "g-p-aaa", "Third chat of project A")])

    run_import(upload(more).json()["id"])

    assert _projects_of(user) == {"ChatGPT project 1": {"p1", "p3", "p4"}, "ChatGPT project 2": {"p2"}}


def test_remove_deletes_the_projects_it_created_unless_something_else_is_in_them(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any, user: Any
) -> None:
    import_id = upload(_chatgpt_projects()).json()["id"]
    run_import(import_id)
    kept = Project.objects.get(owner=user, name="ChatGPT project 2")
    mine = conversation_create(user=user)
    Conversation.objects.filter(pk=mine.pk).update(project=kept)

    removed = api_client.delete(f"/api/imports/{import_id}").json()

    assert removed == {"conversations": 4, "memories": 0, "projects": 1}
    assert list(Project.objects.filter(owner=user).values_list("name", flat=True)) == ["ChatGPT project 2"]
    assert list(Conversation.objects.filter(owner=user)) == [mine]


def test_chatgpt_projects_are_named_in_the_users_language(
    upload: Callable[..., Any], run_import: Callable[[int], str], user: Any
) -> None:
    user.language = "zh-hans"
    user.save()

    run_import(upload(exports.chatgpt_zip([exports.gpt_project_chat("p1", "g-p-aaa", "hi")])).json()["id"])

    assert Project.objects.get(owner=user).name == "ChatGPT 项目 1"
