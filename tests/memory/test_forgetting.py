"""Forgetting, part two (SPEC §8): work in flight re-checks at commit, the registry, retention, and the
database's own free pages. The whole-database scans after each kind of deletion are in
tests/test_forgetting_scan.py."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client
from django.utils import timezone, translation

from accounts.models import User
from chat.models import AgentState, ConversationMarker
from chat.services import conversation_create, conversation_delete
from chat.turn.agent import Turn
from memory import forgetting, services
from memory.changes import MemoryChange
from memory.extraction import outcomes, retention
from memory.models import ExtractionRun, Memory
from memory.notices import mark_conversation
from tests.helpers import make_memory, make_user, run, say
from tests.scan import scan_beyond_display_log, scan_for
from tests.turns import run_to_end

SENTENCE = "Keeps bees on the roof of a building in Marseille."


def test_every_copy_is_registered_in_one_place() -> None:
    assert {"markers", "runs", "agent-states", "admin-log"} <= set(forgetting.redactors())


def test_a_sentence_is_found_plain_escaped_and_shortened() -> None:
    forgotten = forgetting.Forgotten(user_id=1, contents={1: '我养蜂 "quoted"'})
    forms = forgotten.forms()
    assert '我养蜂 "quoted"' in forms and "Ends in dots" in forgetting.Forgotten(1, {1: "Ends in dots..."}).forms()
    assert '我养蜂 "quoted"' in forms and '\\u6211\\u517b\\u8702 \\"quoted\\"' in forms
    assert forgetting.redact_value({"a": ['x 我养蜂 "quoted" y']}, forms, "_") == {"a": ["x _ y"]}


@pytest.mark.django_db
def test_a_run_that_finishes_after_a_delete_keeps_no_copy(fake_model: Any, user: Any, conversation: Any) -> None:
    kept = make_memory(owner=user, content=SENTENCE)
    message = say(conversation, "Actually the bees moved to Aix.")

    def judge_while_the_user_deletes(messages: Any) -> str:
        services.memory_delete(user=user, memory=kept)  # the user deletes it while the judge thinks
        return json.dumps({"operations": [{"op": "update", "id": kept.pk, "content": f"{SENTENCE} Now in Aix."}]})

    fake_model.judge(judge_while_the_user_deletes)
    result = run(user, up_to=message)

    assert result.status == outcomes.Outcome.ABANDONED
    assert scan_beyond_display_log(SENTENCE) == []
    record = ExtractionRun.objects.get(owner=user)
    assert forgetting.DELETED_MEMORY in record.judge_input[-1]["content"]


@pytest.mark.django_db
def test_a_run_that_finishes_after_its_conversation_was_deleted_keeps_no_copy(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    typed = "My sister's wedding is in Porto next June, I am the best man."
    message = say(conversation, typed)

    def judge_while_the_user_deletes(messages: Any) -> str:
        conversation_delete(conversation=conversation)
        return json.dumps({"operations": [{"op": "add", "content": "Is the best man at a wedding.", "sources": [1]}]})

    fake_model.judge(judge_while_the_user_deletes)
    run(user, up_to=message)

    assert scan_for(typed) == []
    assert not Memory.objects.filter(owner=user).exists()


@pytest.mark.django_db
def test_work_for_a_deleted_account_is_a_no_op(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I grow tomatoes on my balcony.")

    def judge_while_the_account_goes(messages: Any) -> str:
        User.objects.filter(pk=user.pk).delete()
        return json.dumps({"operations": [{"op": "add", "content": "Grows tomatoes.", "sources": [1]}]})

    fake_model.judge(judge_while_the_account_goes)
    result = run(user, up_to=message)

    assert result.status in (outcomes.Outcome.ABANDONED, outcomes.Outcome.FAILED)
    assert not ExtractionRun.objects.exists() and not Memory.objects.exists()
    assert run(user, up_to=message).status == outcomes.Outcome.MEMORY_OFF  # and later work does nothing


@pytest.mark.django_db
def test_a_marker_written_after_the_memory_was_deleted_names_no_text(user: Any, conversation: Any) -> None:
    message = say(conversation, "bees")
    record = ExtractionRun.objects.create(owner=user, trigger="flush", status="applied", message_ids=[message.pk])
    memory = make_memory(owner=user, content=SENTENCE)
    change = MemoryChange("add", memory_id=memory.pk, content=SENTENCE)
    Memory.objects.filter(pk=memory.pk).delete()

    mark_conversation(None, user_id=user.pk, run_id=record.pk, changes=[change])

    assert ConversationMarker.objects.get().text == "Memory updated · (deleted)"


@pytest.mark.django_db(transaction=True)
async def test_a_turn_that_finishes_after_a_delete_saves_no_copy_in_its_state(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user)
    quoted = await sync_to_async(make_memory)(owner=user, content=SENTENCE)
    learned = "Has a dog called Pastis who is afraid of bees."
    fake_model.call_tool("flush_memory")
    fake_model.judge({"operations": [{"op": "add", "content": learned, "sources": [1]}]})
    gated = fake_model.reply(f"I know: {SENTENCE} And now: {learned}")
    gated.gate = asyncio.Event()

    turn = await Turn.begin(user=user, conversation=conversation, content="Remember that my dog Pastis fears bees.")
    task = asyncio.create_task(run_to_end(turn))
    while len(fake_model.requests) < 2:  # the tool ran; the reply waits at its gate
        await asyncio.sleep(0.02)
    new = await Memory.objects.aget(owner=user, content=learned)
    await sync_to_async(services.memory_delete)(user=user, memory=quoted)
    await sync_to_async(services.memory_delete)(user=user, memory=new)
    gated.gate.set()
    assert (await task).type == "done"

    state = await AgentState.objects.aget(conversation=conversation)
    saved = json.dumps(state.context, ensure_ascii=False)
    assert SENTENCE not in saved and learned not in saved
    tool_result = next(item for item in state.context if item.get("role") == "tool")
    assert tool_result["content"] == f"Memory updated. Remembered: {forgetting.DELETED_MEMORY}"
    assert await sync_to_async(scan_beyond_display_log)(SENTENCE) == []
    assert await sync_to_async(scan_beyond_display_log)(learned) == []


# --- retention ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_retention_strips_the_text_of_old_runs_and_keeps_their_counts(user: Any, settings: Any) -> None:
    settings.MEMORY_RUN_RETENTION_DAYS = 30
    ops = [{"op": "add", "content": SENTENCE, "sources": [1, 2]}]
    dropped = [{"op": "add", "content": "a secret", "reason": "credential: a secret"}]

    def make_run(days: int) -> ExtractionRun:
        record = ExtractionRun.objects.create(
            owner=user, trigger="background", status="applied", message_ids=[1, 2], judge_ms=420,
            judge_input=[{"role": "user", "content": SENTENCE}], raw_output=json.dumps(ops), applied_ops=ops,
            dropped_ops=dropped, error=f"note about {SENTENCE}", finished_at=timezone.now(),
        )  # fmt: skip
        ExtractionRun.objects.filter(pk=record.pk).update(started_at=timezone.now() - timedelta(days=days))
        return record

    old, recent = make_run(31), make_run(29)

    assert retention.runs_text_strip() == 1

    old.refresh_from_db()
    assert old.text_removed_at is not None and old.judge_input == [] and old.raw_output == ""
    assert old.applied_ops == [{"op": "add", "sources": 2}] and old.dropped_ops == [{"op": "add"}]
    assert old.error == retention.TEXT_REMOVED and old.status == "applied" and old.judge_ms == 420
    assert old.message_ids == [1, 2]
    recent.refresh_from_db()
    assert recent.text_removed_at is None and recent.raw_output
    assert retention.runs_text_strip() == 0


@pytest.mark.django_db
def test_the_worker_sweep_applies_retention(user: Any, settings: Any) -> None:
    from memory.tasks import sweep_extractions_task

    record = ExtractionRun.objects.create(owner=user, trigger="flush", status="failed", raw_output=SENTENCE)
    ExtractionRun.objects.filter(pk=record.pk).update(started_at=timezone.now() - timedelta(days=40))

    sweep_extractions_task()

    assert ExtractionRun.objects.get(pk=record.pk).raw_output == ""


@pytest.mark.django_db
def test_the_admin_shows_a_run_lost_its_text_to_retention(user: Any, admin_client: Client) -> None:
    record = ExtractionRun.objects.create(owner=user, trigger="flush", status="applied", text_removed_at=timezone.now())
    page = admin_client.get(f"/admin/memory/extractionrun/{record.pk}/change/").content.decode()
    assert "removed by retention" in page


@pytest.mark.django_db
def test_sqlite_overwrites_deleted_rows() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only; PostgreSQL's vacuum is described in docs/security.md")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_a_summary_made_before_a_delete_is_not_saved_after_it(user: Any, conversation: Any) -> None:
    from chat.turn.compaction import state_compacted_save
    from chat.turn.cut import summary_item
    from chat.turn.summary import Compacted

    memory = make_memory(owner=user, content=SENTENCE)
    read = [{"role": "user", "content": "What do you know?"}, {"role": "assistant", "content": f"That: {SENTENCE}"}]
    AgentState.objects.filter(conversation=conversation).update(context=read)
    version = AgentState.objects.get(conversation=conversation).version
    summary = Compacted([summary_item(f"The user keeps bees: {SENTENCE}")], summarized_turns=1, summarized=True)

    services.memory_delete(user=user, memory=memory)  # while the summary was being written
    saved = state_compacted_save(conversation_id=conversation.pk, version=version, result=summary, read=read)

    assert saved is None
    assert scan_beyond_display_log(SENTENCE) == []


@pytest.mark.django_db
def test_the_admins_delete_of_a_memory_is_a_permanent_delete_too(user: Any, admin_client: Client) -> None:
    memory = make_memory(owner=user, content=SENTENCE)
    ExtractionRun.objects.create(owner=user, trigger="flush", status="applied", raw_output=SENTENCE)

    response = admin_client.post(f"/admin/memory/memory/{memory.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert scan_for(SENTENCE) == []  # the admin's own log of it included
    from django.contrib.admin.models import LogEntry

    assert LogEntry.objects.get(object_id=str(memory.pk)).object_repr in (f"memory {memory.pk}", "(deleted)")


@pytest.mark.django_db
def test_the_admins_delete_of_a_user_deletes_the_account_like_the_user_would(admin_client: Client) -> None:
    leaving = make_user(username="leaving")
    say(conversation_create(user=leaving), "My words, to be deleted with me.")

    response = admin_client.post(f"/admin/accounts/user/{leaving.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert scan_for("My words, to be deleted with me.") == []


@pytest.mark.django_db
def test_deleting_a_memory_takes_its_text_out_of_the_markers_data_too(user: Any, conversation: Any) -> None:
    message = say(conversation, "bees")
    record = ExtractionRun.objects.create(owner=user, trigger="flush", status="applied", message_ids=[message.pk])
    memory = make_memory(owner=user, content=SENTENCE)
    mark_conversation(
        None, user_id=user.pk, run_id=record.pk, changes=[MemoryChange("add", memory_id=memory.pk, content=SENTENCE)]
    )
    assert SENTENCE in str(ConversationMarker.objects.get().data)

    services.memory_delete(user=user, memory=memory)

    marker = ConversationMarker.objects.get()
    assert SENTENCE not in str(marker.data) and SENTENCE not in marker.text
    assert marker.data["changes"][0]["deleted"] is True
    with translation.override("zh-hans"):
        assert marker.shown()[0] == "记忆已更新 · （已删除）"
