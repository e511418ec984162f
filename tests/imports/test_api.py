from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from chat.models import AgentState, Conversation, Message, SearchEntry
from imports.models import ChatImport
from tests.imports import exports

pytestmark = pytest.mark.django_db


def _gpt_export() -> bytes:
    return exports.chatgpt_zip([exports.gpt_branched(), exports.gpt_chinese(), exports.gpt_cycle()])


def test_dry_run_previews_counts_dates_and_skips_and_writes_no_conversation(
    upload: Callable[..., Any], user: Any
) -> None:
    response = upload(_gpt_export(), dry_run="true")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "previewed"
    assert body["source"] == "chatgpt"
    assert body["counts"] == {"conversations": 2, "messages": 6, "skipped": 1}
    preview = body["preview"]
    assert preview["first"].startswith("2024-05-01T08:00")
    assert preview["skipped"] == [{"id": "c-cycle", "title": "Broken tree", "reason": "its message tree has a cycle"}]
    assert preview["dropped"]["branches"] == 2
    assert not Conversation.objects.filter(owner=user).exists()


def test_started_import_lands_conversations_with_titles_times_order_and_origin(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any, user: Any
) -> None:
    created = upload(_gpt_export(), dry_run="true").json()
    assert api_client.post(f"/api/imports/{created['id']}/start").status_code == 202

    assert run_import(created["id"]) == "done"

    body = api_client.get(f"/api/imports/{created['id']}").json()
    assert body["status"] == "done"
    assert body["progress"] == 1.0
    assert body["counts"] == {"conversations": 2, "messages": 6, "skipped": 1}
    assert body["errors"][0]["reason"] == "its message tree has a cycle"
    phone = Conversation.objects.get(owner=user, imported_id="c-phone")
    assert (phone.title, phone.imported_from) == ("Picking a phone", "chatgpt")
    assert phone.created_at.timestamp() == exports.T0
    messages = list(Message.objects.filter(conversation=phone).order_by("created_at", "id"))
    assert [m.content for m in messages] == [
        "Which phone is good for one hand?",
        "Small phones are easier one-handed.",
        "[image]\nLike this one?",
        "Yes, that one is small.",
    ]
    assert messages[0].created_at.timestamp() == exports.T0 + 10
    assert {m.memory_status for m in messages if m.role == "user"} == {"skipped"}
    # Continuable: the agent state holds the same messages for the model.
    assert AgentState.objects.get(conversation=phone).context[0] == {
        "role": "user",
        "content": "Which phone is good for one hand?",
    }
    zh = Conversation.objects.get(owner=user, imported_id="c-zh")
    assert zh.messages.order_by("created_at", "id")[0].content == "我一直喜欢小屏手机，单手用起来方便。"


def test_imported_conversations_are_searchable_and_in_the_conversation_api(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any
) -> None:
    run_import(upload(_gpt_export()).json()["id"])

    hits = api_client.get("/api/search", {"q": "one-handed"}).json()
    assert any("one-handed" in hit["excerpt"] for hit in hits if hit["message_id"])
    assert SearchEntry.objects.exists()
    listed = {c["imported_id"]: c for c in api_client.get("/api/conversations").json()}
    assert listed["c-phone"]["imported_from"] == "chatgpt"
    assert listed["c-phone"]["title"] == "Picking a phone"


def test_reimporting_the_same_export_adds_no_conversation(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any, user: Any
) -> None:
    run_import(upload(_gpt_export()).json()["id"])
    again = upload(_gpt_export(), dry_run="true").json()

    assert again["preview"]["already_imported"] == 2
    assert again["counts"]["conversations"] == 0
    api_client.post(f"/api/imports/{again['id']}/start")
    run_import(again["id"])

    assert api_client.get(f"/api/imports/{again['id']}").json()["counts"]["conversations"] == 0
    assert Conversation.objects.filter(owner=user).count() == 2


def test_claude_export_with_a_project_and_content_blocks_imports(
    upload: Callable[..., Any], run_import: Callable[[int], str], user: Any
) -> None:
    conversations, projects = exports.claude_export()
    body = upload(exports.claude_zip(conversations, projects), source="claude", dry_run="true").json()

    assert body["preview"]["projects"] == [{"key": "proj-thesis", "name": "River thesis", "conversations": 1}]
    ChatImport.objects.filter(pk=body["id"]).update(status="queued")
    run_import(body["id"])
    thesis = Conversation.objects.get(owner=user, imported_id="cl-1")
    assert thesis.imported_from == "claude"
    assert [m.content for m in thesis.messages.order_by("created_at", "id")] == [
        "Help me outline chapter two of my thesis on river ecology.\n\n[attachment: notes.txt]",
        "Here is an outline: 1. Habitats 2. Flow.",
    ]


def test_a_bare_conversations_json_is_accepted(upload: Callable[..., Any]) -> None:
    response = upload(exports.as_json([exports.gpt_chinese()]), name="conversations.json", dry_run="true")

    assert response.status_code == 201
    assert response.json()["counts"]["conversations"] == 1


def _zip_with_member(name: str) -> bytes:
    return exports.as_zip({name: b"[]", "conversations.json": exports.as_json([exports.gpt_chinese()])})


def _bomb() -> bytes:
    return exports.as_zip({"conversations.json": b"[" + b" " * (30 * 1024 * 1024) + b"]"})


BAD_FILES = {
    "not a zip or json": (b"GIF89a not an export", 400, "neither a ZIP nor a JSON"),
    "a zip with ..": (_zip_with_member("../evil.json"), 400, "unsafe path"),
    "a zip without conversations": (exports.as_zip({"chat.html": b"<html>"}), 400, "no conversations.json"),
    "a truncated zip": (exports.chatgpt_zip([exports.gpt_chinese()])[:-30], 400, "damaged or truncated"),
    "truncated json": (exports.as_json([exports.gpt_chinese()])[:-5], 400, "cut short"),
    "invalid utf-8": (b'[{"mapping": {}, "title": "\xff\xfe"}]', 400, "UTF-8"),
    "not json": (b"[{mapping: nope}]", 400, "not valid JSON"),
    "the wrong export": (b'[{"messages": []}]', 400, "not a ChatGPT or Claude export"),
    "a json object": (b'{"conversations": []}', 400, "not a list of conversations"),
    "an empty list": (b"[]", 400, "no conversations"),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_bad_files_answer_a_clear_4xx_and_leave_no_rows_or_files(
    case: str, upload: Callable[..., Any], user: Any, settings: Any
) -> None:
    data, status, words = BAD_FILES[case]

    response = upload(data, dry_run="true")

    assert response.status_code == status, response.json()
    assert words in response.json()["detail"]
    assert not ChatImport.objects.exists()
    assert not Conversation.objects.exists()
    assert not any(Path(settings.IMPORT_DIR).glob("*")) if Path(settings.IMPORT_DIR).exists() else True


def test_a_decompression_bomb_is_refused(upload: Callable[..., Any]) -> None:
    response = upload(_bomb())

    assert response.status_code == 413
    assert "decompression bomb" in response.json()["detail"]


def test_an_upload_over_import_max_bytes_is_refused(upload: Callable[..., Any], settings: Any) -> None:
    settings.IMPORT_MAX_BYTES = 100

    response = upload(_gpt_export())

    assert response.status_code == 413
    assert "IMPORT_MAX_BYTES" in response.json()["detail"]


def test_the_wrong_source_is_refused(upload: Callable[..., Any]) -> None:
    response = upload(_gpt_export(), source="claude")

    assert response.status_code == 400
    assert "ChatGPT export, not a Claude one" in response.json()["detail"]


def test_another_users_import_answers_404(upload: Callable[..., Any], client: Any, other_user: Any) -> None:
    import_id = upload(_gpt_export(), dry_run="true").json()["id"]
    client.force_login(other_user)
    client.defaults.pop("HTTP_AUTHORIZATION", None)

    assert client.get(f"/api/imports/{import_id}").status_code == 404
    assert client.delete(f"/api/imports/{import_id}").status_code == 404
    assert client.post(f"/api/imports/{import_id}/start").status_code == 404
    assert client.post(f"/api/imports/{import_id}/learn").status_code == 404
    assert client.get("/api/imports").json() == []


def test_remove_deletes_the_imported_conversations_and_leaves_no_text(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any, user: Any
) -> None:
    import_id = upload(_gpt_export()).json()["id"]
    run_import(import_id)

    response = api_client.delete(f"/api/imports/{import_id}")

    assert response.status_code == 200
    assert response.json()["conversations"] == 2
    assert not Conversation.objects.filter(owner=user).exists()
    assert not ChatImport.objects.exists()
    with connection.cursor() as cursor:
        for table in ("chat_message", "chat_agentstate", "chat_conversation"):
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            assert cursor.fetchone()[0] == 0


def test_the_account_export_includes_imports_and_imported_conversations(
    upload: Callable[..., Any], run_import: Callable[[int], str], api_client: Any
) -> None:
    import_id = upload(_gpt_export()).json()["id"]
    run_import(import_id)

    document = json.loads(b"".join(api_client.get("/api/me/export").streaming_content))

    [entry] = document["imports"]
    assert (entry["id"], entry["source"], entry["status"]) == (import_id, "chatgpt", "done")
    assert len(entry["conversation_ids"]) == 2
    imported = {c["imported_id"]: c["imported_from"] for c in document["conversations"]}
    assert imported == {"c-phone": "chatgpt", "c-zh": "chatgpt"}
