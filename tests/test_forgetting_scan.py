"""Forgetting that forgets (SPEC §8): after a permanent delete, a purge, a conversation's deletion and an
account's deletion, no table and no column of the database holds the text (tests/scan.py) — on SQLite
and, in the PostgreSQL pass, on PostgreSQL.

The memories are learned every way a memory is written: through `flush_memory` in a turn (the model's
reply and the tool result quote it), background extraction (Chinese), a manual add and an edit; one is
longer than a marker's excerpt. Their sentences are copied where the product copies them: markers, run
records (later runs' judge input lists them), agent states (tool results, an assistant item and a
compaction summary that quote them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from accounts.services import api_token_create
from chat.models import AgentState, Conversation, ConversationMarker, Message
from chat.services import conversation_create
from chat.turn import cut
from chat.turn.agent import Turn
from memory.models import ExtractionRun, Memory
from tests.helpers import make_memory, make_user, run, say
from tests.scan import scan_beyond_display_log, scan_for
from tests.turns import run_to_end

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_memory]

FLUSHED = "Is allergic to peanuts and always tells the waiter before ordering at a restaurant."
LEARNED_ZH = "住在杭州，每天骑自行车去西湖边的公司上班。"
ADDED = "Plays the cello in a community orchestra on Thursdays."
BEFORE_EDIT = "Works the night shift at the harbour."
EDITED = "Works the early shift at the Hamburg harbour, so evenings are for sleeping."
PASSWORD = "correct-horse-battery"  # tests.factories.UserFactory's
SENTENCES = [FLUSHED, LEARNED_ZH, ADDED, BEFORE_EDIT, EDITED]


@dataclass
class Learned:
    user: Any
    client: Client
    ids: dict[str, int] = field(default_factory=dict)
    flush_conversation: Any = None
    other_conversation: Any = None


def api(user: Any) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {api_token_create(user=user)[1]}"
    return client


def turn(user: Any, conversation: Any, content: str) -> None:
    async def go() -> None:
        started = await Turn.begin(user=user, conversation=conversation, content=content)
        assert (await run_to_end(started)).type == "done"

    async_to_sync(go)()


def learn_everything(fake_model: Any, username: str = "alice") -> Learned:
    user = make_user(username=username)
    learned = Learned(user=user, client=api(user))
    # 1. flush_memory in a turn: the tool result says "Remembered: …", the reply quotes it.
    conversation = conversation_create(user=user)
    fake_model.call_tool("flush_memory")
    fake_model.reply(f"Noted — I'll keep in mind: {FLUSHED}")
    fake_model.judge({"operations": [{"op": "add", "content": FLUSHED, "sources": [1]}]})
    turn(user, conversation, "Please remember that peanuts are dangerous for me; I warn waiters every time.")
    learned.flush_conversation = conversation
    learned.ids[FLUSHED] = Memory.objects.get(owner=user, content=FLUSHED).pk
    # 2. Background extraction (three pending messages), in Chinese.
    other = conversation_create(user=user)
    say(other, "我住在杭州。")
    say(other, "每天早上我骑车去公司，公司在西湖边。")
    last = say(other, "今天天气不错。")
    fake_model.judge({"operations": [{"op": "add", "content": LEARNED_ZH, "sources": [1, 2]}]})
    assert run(user, up_to=last, trigger=ExtractionRun.Trigger.BACKGROUND).status == "applied"
    learned.ids[LEARNED_ZH] = Memory.objects.get(owner=user, content=LEARNED_ZH).pk
    learned.other_conversation = other
    # 3. A manual add, and 4. an edit (the earlier version stays in history until deleted).
    client = learned.client
    added = client.post("/api/memories", {"content": ADDED}, content_type="application/json")
    assert added.status_code == 201, added.content
    learned.ids[ADDED] = added.json()["id"]
    before = client.post("/api/memories", {"content": BEFORE_EDIT}, content_type="application/json").json()
    edited = client.patch(f"/api/memories/{before['id']}", {"content": EDITED}, content_type="application/json")
    assert edited.status_code == 200, edited.content
    learned.ids[EDITED] = edited.json()["id"]
    learned.ids[BEFORE_EDIT] = before["id"]
    # A later run is shown every active memory ("[id] sentence" in its judge input).
    later = say(other, "Nothing new today.")
    fake_model.judge({"operations": []})
    run(user, up_to=later, trigger=ExtractionRun.Trigger.MANUAL)
    # What the model was told before: an assistant item and a compaction summary quoting memories.
    state = AgentState.objects.get(conversation=other)
    state.context = [
        cut.summary_item(f"The user asked what is remembered; the answer listed: {LEARNED_ZH} {ADDED}"),
        *state.context,
        {"role": "user", "content": "What do you remember about me?"},
        {"role": "assistant", "content": f"I remember: {FLUSHED} {EDITED} {BEFORE_EDIT}"},
    ]
    state.save()
    return learned


def copies_exist(learned: Learned) -> None:
    """Before any deletion, the copies the scan must later not find are really there."""
    assert any(h.table == AgentState._meta.db_table for h in scan_for(FLUSHED))
    assert any(h.table == ExtractionRun._meta.db_table for h in scan_for(ADDED))
    assert any(h.table == ConversationMarker._meta.db_table for h in scan_for(LEARNED_ZH))
    marker = ConversationMarker.objects.filter(conversation=learned.flush_conversation).get()
    assert FLUSHED[:40] in marker.text and FLUSHED not in marker.text  # a shortened excerpt


@pytest.fixture
def learned(fake_model: Any) -> Learned:
    learned = learn_everything(fake_model)
    copies_exist(learned)
    return learned


@pytest.mark.parametrize("sentence", [FLUSHED, LEARNED_ZH, ADDED, EDITED])
def test_a_permanent_delete_leaves_no_copy_of_the_sentence(learned: Learned, sentence: str) -> None:
    response = learned.client.delete(f"/api/memories/{learned.ids[sentence]}")
    assert response.status_code == 204

    gone = [sentence, BEFORE_EDIT] if sentence == EDITED else [sentence]
    for text in gone:
        assert scan_beyond_display_log(text) == [], text
    others = [s for s in SENTENCES if s not in gone]
    assert all(Memory.objects.filter(content=s).exists() for s in others)  # only the one deleted


def test_the_display_log_keeps_the_reply_the_user_saw(learned: Learned) -> None:
    learned.client.delete(f"/api/memories/{learned.ids[FLUSHED]}")

    hits = scan_for(FLUSHED)
    assert [h.table for h in hits] == [Message._meta.db_table]
    reply = Message.objects.get(pk=int(hits[0].row))
    assert reply.role == "assistant" and reply.conversation_id == learned.flush_conversation.pk


def test_the_tool_call_keeps_a_neutral_result_and_markers_say_deleted(learned: Learned) -> None:
    learned.client.delete(f"/api/memories/{learned.ids[FLUSHED]}")

    context = AgentState.objects.get(conversation=learned.flush_conversation).context
    calls = [call["id"] for item in context for call in item.get("tool_calls") or []]
    results = {item["tool_call_id"]: item["content"] for item in context if item.get("role") == "tool"}
    assert calls and set(calls) == set(results)
    assert "(a memory that was since deleted)" in results[calls[0]]
    marker = ConversationMarker.objects.get(conversation=learned.flush_conversation)
    assert marker.text == "Memory updated · (deleted)"


def test_purge_leaves_no_copy_of_any_sentence(learned: Learned) -> None:
    response = learned.client.delete("/api/memories?purge=true")
    assert response.status_code == 200

    for sentence in SENTENCES:
        assert scan_beyond_display_log(sentence) == [], sentence
    runs = ExtractionRun.objects.filter(owner=learned.user)
    assert runs.count() == 3 and all(r.status == "applied" for r in runs)  # counts, status, timings stay


def test_the_next_turn_does_not_carry_a_deleted_memory_to_the_model(learned: Learned, fake_model: Any) -> None:
    learned.client.delete(f"/api/memories/{learned.ids[FLUSHED]}")
    learned.client.delete(f"/api/memories/{learned.ids[EDITED]}")

    fake_model.reply("Anything else?")
    turn(learned.user, learned.flush_conversation, "What should I order tonight?")
    fake_model.reply("Sure.")
    turn(learned.user, learned.other_conversation, "And for lunch?")

    for request in fake_model.requests[-2:]:
        sent = str(request["messages"])
        assert FLUSHED not in sent and EDITED not in sent and BEFORE_EDIT not in sent
        assert "(a memory that was since deleted)" in sent
    assert ADDED in str(fake_model.requests[-1]["messages"])  # a memory not deleted still is


def test_forgetting_without_purge_keeps_the_text_for_restoring(learned: Learned) -> None:
    assert learned.client.delete("/api/memories").status_code == 200
    assert Memory.objects.filter(content=FLUSHED, invalid_reason="cleared").exists()
    assert any(h.table == AgentState._meta.db_table for h in scan_for(FLUSHED))


# --- deleting a conversation -----------------------------------------------------------------------

TYPED = "My grandmother's recipe uses cardamom and orange peel, never vanilla."


def test_deleting_a_conversation_leaves_no_copy_of_its_messages(fake_model: Any) -> None:
    user = make_user()
    client = api(user)
    doomed = conversation_create(user=user)
    kept = conversation_create(user=user)
    say(doomed, TYPED)
    say(doomed, "It is for a cake.")
    last = say(kept, "Thanks!")
    fake_model.judge({"operations": [{"op": "add", "content": "Bakes from family recipes.", "sources": [1]}]})
    assert run(user, up_to=last, trigger=ExtractionRun.Trigger.BACKGROUND).status == "applied"
    # Another conversation's tool result quoted it (as a history search would).
    state = AgentState.objects.get(conversation=kept)
    state.context = [
        {"role": "user", "content": "What did I say about the cake?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "search_history", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f'Found: "{TYPED}"'},
    ]  # fmt: skip
    state.save()
    assert {h.table for h in scan_for(TYPED)} >= {Message._meta.db_table, ExtractionRun._meta.db_table}

    assert client.delete(f"/api/conversations/{doomed.pk}").status_code == 204

    assert scan_for(TYPED) == []
    assert scan_for("It is for a cake.") == []
    memory = Memory.objects.get(owner=user)
    assert memory.content == "Bakes from family recipes." and not memory.sources.exists()
    tool_result = AgentState.objects.get(conversation=kept).context[-1]
    assert tool_result == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": 'Found: "(a message that was since deleted)"',
    }


# --- deleting an account ---------------------------------------------------------------------------


def _row_counts() -> dict[str, int]:
    from django.apps import apps

    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


def _owned_counts(user: Any) -> dict[str, int]:
    return {
        "conversations": Conversation.objects.filter(owner=user).count(),
        "messages": Message.objects.filter(user=user).count(),
        "memories": Memory.objects.filter(owner=user).count(),
        "runs": ExtractionRun.objects.filter(owner=user).count(),
        "states": AgentState.objects.filter(conversation__owner=user).count(),
        "markers": ConversationMarker.objects.filter(conversation__owner=user).count(),
    }


def test_deleting_an_account_leaves_no_copy_and_touches_nobody_else(fake_model: Any) -> None:
    bob = make_user(username="bob")
    bobs = conversation_create(user=bob)
    say(bobs, "I collect vinyl records of Cuban jazz from the fifties.")
    make_memory(owner=bob, content="Collects Cuban jazz records.")
    bob_counts = _owned_counts(bob)
    alice = learn_everything(fake_model, username="alice")
    alice_counts = _owned_counts(alice.user)
    token = alice.client.defaults["HTTP_AUTHORIZATION"]

    refused = alice.client.delete("/api/me", {"password": "wrong"}, content_type="application/json")
    assert refused.status_code == 403 and "detail" in refused.json()
    assert _owned_counts(alice.user) == alice_counts

    before = _row_counts()
    deleted = alice.client.delete("/api/me", {"password": PASSWORD}, content_type="application/json")
    assert deleted.status_code == 204

    assert Client(HTTP_AUTHORIZATION=token).get("/api/me").status_code == 401
    assert _owned_counts(bob) == bob_counts
    after = _row_counts()
    expected_gone = {
        "accounts.User": 1,
        "chat.Conversation": alice_counts["conversations"],
        "chat.Message": alice_counts["messages"],
        "memory.Memory": alice_counts["memories"],
        "memory.ExtractionRun": alice_counts["runs"],
        "chat.AgentState": alice_counts["states"],
        "chat.ConversationMarker": alice_counts["markers"],
    }
    for label, gone in expected_gone.items():
        assert after[label] == before[label] - gone, label
    for text in [*SENTENCES, "peanuts are dangerous", "我住在杭州", "What do you remember about me?"]:
        assert scan_for(text) == [], text
    assert scan_for("Cuban jazz")  # bob's words are still there
