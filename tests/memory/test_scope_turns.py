"""Every chat request carries only the memories of its conversation's scope (SPEC §9 "Projects"), over many
turns through the real turn (Turn.begin, the fake provider recording each request): an isolated project's
never carries the user's general memories or another project's, a shared one's carries both kinds, a chat
outside projects never carries a project's; a keyed value set in a project wins in its chats only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.models import Conversation, Project
from chat.projects import project_create
from chat.search.query import search
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory.history import search_history
from memory.models import MemoryKey, MemoryUse
from memory.selectors import memory_uses_annotate
from tests.helpers import make_memory, make_message, make_user
from tests.turns import run_to_end

GENERAL = ["Lives in Lyon.", "Prefers detailed answers."]
THESIS = ["The thesis is about glaciers.", "Prefers short answers in the thesis."]
CLIENT = ["The client uses PostgreSQL 16.", "The client's servers run Debian."]
QUESTIONS = [
    "Where do I live, what is the thesis about, and which database does the client use?",
    "Tell me about Lyon, glaciers, PostgreSQL and Debian.",
    "Hello again",
    "Any answers about the thesis, the client's servers or Lyon?",
]


def system_text(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def setup() -> tuple[Any, dict[str, Conversation]]:
    user = make_user()
    thesis = project_create(user=user, name="Thesis", instructions="Cite sources in APA style.")
    client = project_create(user=user, name="Client", memory_mode=Project.MemoryMode.ISOLATED)
    make_memory(owner=user, content=GENERAL[0], pinned=True)
    make_memory(owner=user, content=GENERAL[1], key=MemoryKey.ANSWER_LENGTH)
    make_memory(owner=user, content=THESIS[0], project=thesis, pinned=True)
    make_memory(owner=user, content=THESIS[1], project=thesis, key=MemoryKey.ANSWER_LENGTH)
    for content in CLIENT:
        make_memory(owner=user, content=content, project=client, pinned=True)
    chats = {
        "outside": conversation_create(user=user),
        "thesis": conversation_create(user=user, project=thesis),
        "client": conversation_create(user=user, project=client),
    }
    return user, chats


@pytest.mark.django_db(transaction=True)
async def test_each_request_carries_only_its_scopes_memories_over_many_turns(fake_model: Any) -> None:
    user, chats = await sync_to_async(setup)()
    seen: dict[str, list[str]] = {name: [] for name in chats}
    for question in QUESTIONS:
        for name, conversation in chats.items():
            await run_to_end(await Turn.begin(user=user, conversation=conversation, content=question))
            seen[name].append(system_text(fake_model.requests[-1]))

    assert len(fake_model.requests) == len(QUESTIONS) * len(chats)
    for text in seen["client"]:  # isolated: never the user's general memories, never another project's
        assert all(c in text for c in CLIENT)
        assert not any(c in text for c in [*GENERAL, *THESIS])
    for text in seen["thesis"]:  # shared: both kinds; the project's keyed value replaces the user's
        assert GENERAL[0] in text and THESIS[0] in text and THESIS[1] in text
        assert GENERAL[1] not in text and not any(c in text for c in CLIENT)
        assert '"(this project)"' in text and f"(this project) {THESIS[0]}" in text
        assert "Cite sources in APA style." in text  # the project's instructions, with each turn
    for text in seen["outside"]:  # outside projects: never a project's
        assert GENERAL[0] in text and GENERAL[1] in text
        assert not any(c in text for c in [*THESIS, *CLIENT]) and "this project" not in text
        assert "APA" not in text


@pytest.mark.django_db(transaction=True)
async def test_a_reply_names_the_scope_of_each_memory_it_used(fake_model: Any) -> None:
    user, chats = await sync_to_async(setup)()
    await run_to_end(await Turn.begin(user=user, conversation=chats["thesis"], content="What about glaciers?"))

    def reply_memories() -> list[str]:
        message = chats["thesis"].messages.filter(role="assistant").get()
        memory_uses_annotate([message])
        from django.template.loader import render_to_string

        html = render_to_string("memory/chat/_reply.html", {"message": message})
        return [html, *[m.content for m in message.used_memories]]  # type: ignore[attr-defined]

    html, *used = await sync_to_async(reply_memories)()
    assert set(used) == {GENERAL[0], THESIS[0], THESIS[1]}
    assert "project: Thesis" in html and "about you" in html
    assert await MemoryUse.objects.filter(memory__content=GENERAL[1]).acount() == 0


@pytest.mark.django_db
def test_search_history_in_an_isolated_project_searches_only_its_conversations(fake_model: Any) -> None:
    from chat.extensions import TurnContext

    user, chats = setup()
    for name, conversation in chats.items():
        make_message(conversation=conversation, content=f"Budget talk from {name}")
        from chat.search.index import search_index_messages

        search_index_messages(messages=list(conversation.messages.all()))
    elsewhere = conversation_create(user=user, project=chats["client"].project)
    message = make_message(conversation=elsewhere, content="What did we say about the budget?")
    found = search_history.run(
        TurnContext(user=user, conversation=elsewhere, user_message=message), {"query": "budget"}
    )
    assert "from client" in found and "from thesis" not in found and "from outside" not in found

    general = make_message(conversation=chats["outside"], content="Budget again?")
    found = search_history.run(
        TurnContext(user=user, conversation=chats["outside"], user_message=general), {"query": "budget"}
    )
    assert "from thesis" in found and "from client" not in found  # an isolated project's stay in it

    assert [h.conversation_id for h in search(user=user, text="budget", project=chats["client"].project_id).hits] == [
        chats["client"].pk
    ]


@pytest.mark.django_db
def test_the_search_api_takes_a_project(api_client: Client, user: Any, other_user: Any) -> None:
    theirs = project_create(user=other_user, name="Theirs")
    mine = project_create(user=user, name="Mine")
    assert api_client.get(f"/api/search?q=budget&project={theirs.pk}").status_code == 404
    response = api_client.get(f"/api/search?q=budget&project={mine.pk}")
    assert response.status_code == 200 and response.json() == []
    assert api_client.get("/api/search?q=budget&project=none").status_code == 200


@pytest.mark.django_db
def test_the_export_holds_projects_and_each_rows_project(api_client: Client, user: Any) -> None:
    thesis = project_create(user=user, name="Thesis", instructions="Cite sources.")
    conversation_create(user=user, project=thesis)
    make_memory(owner=user, content="The thesis is due in June.", project=thesis)
    document = json.loads(b"".join(api_client.get("/api/me/export").streaming_content))  # type: ignore[attr-defined]
    assert [(p["name"], p["instructions"], p["memory_mode"]) for p in document["projects"]] == [
        ("Thesis", "Cite sources.", "shared")
    ]
    assert document["conversations"][0]["project_id"] == thesis.pk
    assert document["memories"][0]["project_id"] == thesis.pk
