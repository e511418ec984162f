"""What a project's chats learn, and where it goes (SPEC §9): one scope per batch, the judge told the project
and shown that scope's memories, `"scope"` on add and update, an isolated project keeping everything, keyed
values per scope; the offline demo judge's rules alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat.models import Project
from chat.projects import project_create
from chat.services import conversation_create
from memory.demo import judge as demo
from memory.extraction import judge
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun, Memory, MemoryKey
from tests.helpers import make_memory, run, say

pytestmark = pytest.mark.django_db


def scoped(user: Any) -> dict[str, tuple[str, int | None]]:
    return {m.content: (m.key, m.project_id) for m in Memory.objects.filter(owner=user, invalid_at__isnull=True)}


def test_a_shared_projects_batch_learns_into_the_scope_the_judge_names(fake_model: Any, user: Any) -> None:
    thesis = project_create(user=user, name="Thesis")
    general = make_memory(owner=user, content="Lives in Lyon.")
    own = make_memory(owner=user, content="The thesis is about glaciers.", project=thesis)
    make_memory(owner=user, content="The client uses PostgreSQL 16.", project=project_create(user=user, name="Client"))
    chat = conversation_create(user=user, project=thesis)
    message = say(chat, "I'm vegetarian. The thesis is due in June, keep answers short in this project.")
    fake_model.judge(
        {
            "operations": [
                {"op": "add", "content": "Is vegetarian.", "sources": [1], "scope": "user"},
                {"op": "add", "content": "The thesis is due in June.", "sources": [1], "scope": "project"},
                {"op": "add", "content": "Prefers short answers.", "sources": [1], "key": "answer_length",
                 "scope": "project"},
            ]
        }
    )  # fmt: skip

    result = run(user, up_to=message)

    assert result.status == Outcome.APPLIED
    shown = fake_model.judge_requests[0]["messages"][-1]["content"]
    assert 'project "Thesis"' in shown
    assert f"[{general.pk}] Lives in Lyon. (scope: user)" in shown
    assert f"[{own.pk}] The thesis is about glaciers. (scope: project)" in shown
    assert "PostgreSQL" not in shown  # another project's memories are never shown
    learned = scoped(user)
    assert learned["Is vegetarian."] == ("", None)
    assert learned["The thesis is due in June."] == ("", thesis.pk)
    assert learned["Prefers short answers."] == (MemoryKey.ANSWER_LENGTH, thesis.pk)


def test_an_isolated_project_keeps_what_it_learns_whatever_the_judge_says(fake_model: Any, user: Any) -> None:
    client = project_create(user=user, name="Client", memory_mode=Project.MemoryMode.ISOLATED)
    make_memory(owner=user, content="Lives in Lyon.")
    chat = conversation_create(user=user, project=client)
    message = say(chat, "I'm vegetarian, and the client's servers run Debian.")
    fake_model.judge(
        {
            "operations": [
                {"op": "add", "content": "Is vegetarian.", "sources": [1], "scope": "user"},
                {"op": "add", "content": "The client's servers run Debian.", "sources": [1]},
            ]
        }
    )

    run(user, up_to=message)

    shown = fake_model.judge_requests[0]["messages"][-1]["content"]
    assert "Lyon" not in shown and "keeps its memories to itself" in shown
    learned = scoped(user)
    assert learned["Is vegetarian."] == ("", client.pk)
    assert learned["The client's servers run Debian."] == ("", client.pk)
    assert not Memory.objects.filter(owner=user, project__isnull=True).exclude(content="Lives in Lyon.").exists()


def test_a_batch_holds_one_scope_and_the_next_takes_the_next(fake_model: Any, user: Any) -> None:
    thesis = project_create(user=user, name="Thesis")
    outside = conversation_create(user=user)
    inside = conversation_create(user=user, project=thesis)
    say(outside, "I live in Lyon.")
    last = say(inside, "The thesis is due in June.")
    fake_model.judge({"operations": []})
    fake_model.judge({"operations": []})

    result = run(user, up_to=last)

    assert result.status == Outcome.APPLIED
    first, second = (r["messages"][-1]["content"] for r in fake_model.judge_requests)
    assert "I live in Lyon." in first and "thesis" not in first and "project" not in first
    assert "The thesis is due in June." in second and "Lyon" not in second.split("New messages")[1]
    assert ExtractionRun.objects.count() == 2


def test_a_keyed_value_in_a_project_leaves_the_users_value_alone(fake_model: Any, user: Any) -> None:
    thesis = project_create(user=user, name="Thesis")
    detailed = make_memory(owner=user, content="Prefers detailed answers.", key=MemoryKey.ANSWER_LENGTH)
    message = say(conversation_create(user=user, project=thesis), "In this project keep answers short.")
    fake_model.judge(
        {"operations": [{"op": "update", "id": detailed.pk, "content": "Prefers short answers.", "sources": [1],
                         "key": "answer_length", "scope": "project"}]}
    )  # fmt: skip

    run(user, up_to=message)

    detailed.refresh_from_db()
    assert detailed.invalid_at is None  # an update naming the other scope adds the fact there instead
    assert scoped(user)["Prefers short answers."] == (MemoryKey.ANSWER_LENGTH, thesis.pk)


def test_a_project_with_memory_off_learns_nothing(fake_model: Any, user: Any) -> None:
    scratch = project_create(user=user, name="Scratch")
    message = say(conversation_create(user=user, project=scratch), "I'm vegetarian.")
    scratch.memory_mode = Project.MemoryMode.OFF  # switched off while the message waited
    scratch.save()

    result = run(user, up_to=message)

    assert result.status == Outcome.NOTHING_PENDING
    assert fake_model.judge_requests == []
    message.refresh_from_db()
    assert message.memory_status == "skipped"


def demo_answer(memories: list[judge.ActiveMemory], texts: list[str], project: tuple[str, str] | None) -> list[Any]:
    pending = [
        judge.PendingMessage(i + 1, "c", text, None, 7 if project else None, project[1] if project else "",
                             project[0] if project else "")
        for i, text in enumerate(texts)
    ]  # fmt: skip
    rendered = judge.render_input(memories=memories, pending=pending)
    return list(json.loads(demo.judge_answer(rendered.messages[1]["content"]))["operations"])


def test_the_demo_judge_puts_facts_about_the_work_in_the_project_and_the_rest_with_the_user() -> None:
    ops = demo_answer([], ["I'm vegetarian. The thesis is due in June.", "论文六月底截止。"], ("Thesis", "shared"))
    assert [(o["content"], o["scope"]) for o in ops] == [
        ("Is vegetarian", "user"),
        ("The thesis is due in June", "project"),
        ("论文六月底截止", "project"),
    ]


def test_the_demo_judge_keeps_a_preference_for_this_project_beside_the_users_own() -> None:
    general = judge.ActiveMemory(3, "Prefers detailed answers", "answer_length", None, None, True)
    ops = demo_answer([general], ["In this project, keep answers short."], ("Thesis", "shared"))
    assert ops == [
        {"op": "add", "content": "Prefers short answers", "sources": [1], "key": "answer_length", "scope": "project"}
    ]


def test_outside_projects_the_demo_judge_names_no_scope() -> None:
    ops = demo_answer([], ["I'm vegetarian. The thesis is due in June."], None)
    assert ops == [{"op": "add", "content": "Is vegetarian", "sources": [1], "key": "diet", "pin": True}]
