"""Exports as ChatGPT and Claude write them, built for tests: the shapes follow real exports (ChatGPT's
message tree with `current_node`, hidden context messages, tool traffic, images in `multimodal_text`;
Claude's `chat_messages` with content blocks and `projects.json`), the words are ours."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

T0 = 1714550400.0  # 2024-05-01T08:00:00Z


def gpt_message(
    node_id: str,
    role: str,
    parts: list[Any] | None = None,
    *,
    at: float | None,
    content_type: str = "text",
    recipient: str = "all",
    hidden: bool = False,
    content: dict[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"model_slug": "gpt-4o"} if role == "assistant" else {}
    if hidden:
        metadata["is_visually_hidden_from_conversation"] = True
    return {
        "id": f"msg-{node_id}",
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": content or {"content_type": content_type, "parts": parts or []},
        "status": "finished_successfully",
        "end_turn": True if role == "assistant" else None,
        "weight": 1.0,
        "metadata": metadata,
        "recipient": recipient,
        "channel": None,
    }


def gpt_conversation(
    conv_id: str,
    title: str,
    nodes: list[tuple[str, str | None, dict[str, Any] | None]],
    *,
    current: str,
    template: str | None = None,
    created: float = T0,
    updated: float | None = None,
) -> dict[str, Any]:
    """`nodes`: (node id, parent id, message) in any order; children are derived from the parents."""
    mapping: dict[str, Any] = {n: {"id": n, "message": m, "parent": p, "children": []} for n, p, m in nodes}
    for node_id, parent, _m in nodes:
        if parent is not None:
            mapping[parent]["children"].append(node_id)
    return {
        "title": title,
        "create_time": created,
        "update_time": updated if updated is not None else created + 600,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": current,
        "plugin_ids": None,
        "conversation_id": conv_id,
        "conversation_template_id": template,
        "gizmo_id": template,
        "gizmo_type": "snorlax" if template else None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": conv_id,
    }


def gpt_branched() -> dict[str, Any]:
    """A chat with an edited question (two branches), a hidden context message, a tool call, an image."""
    return gpt_conversation(
        "c-phone",
        "Picking a phone",
        [
            ("root", None, None),
            ("sys", "root", gpt_message("sys", "system", [""], at=None, hidden=True)),
            (
                "ctx",
                "sys",
                gpt_message(
                    "ctx",
                    "user",
                    at=None,
                    hidden=True,
                    content={
                        "content_type": "user_editable_context",
                        "user_profile": "I am a teacher",
                        "user_instructions": "",
                    },
                ),
            ),
            ("u1", "ctx", gpt_message("u1", "user", ["Which phone is good for one hand?"], at=T0 + 10)),
            ("a1-old", "u1", gpt_message("a1-old", "assistant", ["An old answer that was regenerated."], at=T0 + 20)),
            ("a1", "u1", gpt_message("a1", "assistant", ["Small phones are easier one-handed."], at=T0 + 30)),
            ("u2-old", "a1", gpt_message("u2-old", "user", ["A question I edited away"], at=T0 + 40)),
            (
                "u2",
                "a1",
                gpt_message(
                    "u2",
                    "user",
                    [
                        {
                            "content_type": "image_asset_pointer",
                            "asset_pointer": "file-service://file-abc",
                            "size_bytes": 1000,
                            "width": 10,
                            "height": 10,
                        },
                        "Like this one?",
                    ],
                    at=T0 + 50,
                    content_type="multimodal_text",
                ),
            ),
            (
                "call",
                "u2",
                gpt_message(
                    "call",
                    "assistant",
                    at=T0 + 55,
                    recipient="browser",
                    content={"content_type": "code", "language": "unknown", "text": "search('small phones')"},
                ),
            ),
            (
                "tool",
                "call",
                gpt_message(
                    "tool",
                    "tool",
                    at=T0 + 56,
                    name="browser",
                    content={"content_type": "tether_browsing_display", "result": "results…", "summary": None},
                ),
            ),
            (
                "think",
                "tool",
                gpt_message(
                    "think",
                    "assistant",
                    at=T0 + 57,
                    content={"content_type": "thoughts", "thoughts": [{"summary": "s", "content": "c"}]},
                ),
            ),
            ("a2", "think", gpt_message("a2", "assistant", ["Yes, that one is small."], at=T0 + 60)),
        ],
        current="a2",
    )


def gpt_chinese() -> dict[str, Any]:
    return gpt_conversation(
        "c-zh",
        "选手机",
        [
            ("root", None, None),
            ("u1", "root", gpt_message("u1", "user", ["我一直喜欢小屏手机，单手用起来方便。"], at=T0 + 3600)),
            ("a1", "u1", gpt_message("a1", "assistant", ["好的，小屏手机确实更方便单手操作。"], at=T0 + 3610)),
        ],
        current="a1",
        created=T0 + 3600,
    )


def gpt_project_chat(conv_id: str, template: str, text: str, *, at: float = T0 + 7200) -> dict[str, Any]:
    return gpt_conversation(
        conv_id,
        f"Project chat {conv_id}",
        [("root", None, None), ("u1", "root", gpt_message("u1", "user", [text], at=at))],
        current="u1",
        template=template,
        created=at,
    )


def gpt_cycle() -> dict[str, Any]:
    return gpt_conversation(
        "c-cycle",
        "Broken tree",
        [("x", "y", gpt_message("x", "user", ["a"], at=T0)), ("y", "x", gpt_message("y", "assistant", ["b"], at=T0))],
        current="x",
    )


def claude_conversation(
    uuid: str,
    name: str,
    messages: list[dict[str, Any]],
    *,
    project: str | None = None,
    created: str = "2024-06-01T09:00:00.000000Z",
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "uuid": uuid,
        "name": name,
        "summary": "",
        "created_at": created,
        "updated_at": "2024-06-01T09:30:00.000000Z",
        "account": {"uuid": "acc-1"},
        "chat_messages": messages,
    }
    if project:
        data["project_uuid"] = project
    return data


def claude_message(
    uuid: str, sender: str, blocks: list[dict[str, Any]], *, at: str, text: str = "", **extra: Any
) -> dict[str, Any]:
    return {
        "uuid": uuid,
        "text": text,
        "content": blocks,
        "sender": sender,
        "created_at": at,
        "updated_at": at,
        "attachments": extra.get("attachments", []),
        "files": extra.get("files", []),
    }


def claude_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "start_timestamp": None, "stop_timestamp": None, "citations": []}


def claude_export() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A project chat with tool blocks and an attachment, and a plain chat; and projects.json."""
    project_chat = claude_conversation(
        "cl-1",
        "Thesis outline",
        [
            claude_message(
                "m1",
                "human",
                [claude_text("Help me outline chapter two of my thesis on river ecology.")],
                at="2024-06-01T09:00:05.000000Z",
                attachments=[
                    {"file_name": "notes.txt", "file_size": 12, "file_type": "txt", "extracted_content": "notes"}
                ],
            ),
            claude_message(
                "m2",
                "assistant",
                [
                    {"type": "thinking", "thinking": "private reasoning"},
                    {"type": "tool_use", "name": "web_search", "input": {"query": "river ecology"}},
                    {"type": "tool_result", "name": "web_search", "content": [{"type": "text", "text": "results"}]},
                    claude_text("Here is an outline: 1. Habitats 2. Flow."),
                ],
                at="2024-06-01T09:00:30.000000Z",
            ),
        ],
        project="proj-thesis",
    )
    plain = claude_conversation(
        "cl-2",
        "Coffee",
        [
            claude_message("n1", "human", [], text="I drink my coffee black.", at="2024-06-02T08:00:00.000000Z"),
            claude_message("n2", "assistant", [claude_text("Noted.")], at="2024-06-02T08:00:03.000000Z"),
        ],
        created="2024-06-02T08:00:00.000000Z",
    )
    projects = [
        {
            "uuid": "proj-thesis",
            "name": "River thesis",
            "description": "",
            "is_private": True,
            "prompt_template": "",
            "created_at": "2024-05-01T00:00:00Z",
            "updated_at": "2024-05-01T00:00:00Z",
            "docs": [],
        }
    ]
    return [project_chat, plain], projects


def as_json(conversations: list[dict[str, Any]]) -> bytes:
    return json.dumps(conversations, ensure_ascii=False).encode("utf-8")


def as_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def chatgpt_zip(conversations: list[dict[str, Any]]) -> bytes:
    return as_zip({"conversations.json": as_json(conversations), "chat.html": b"<html></html>", "user.json": b"{}"})


def claude_zip(conversations: list[dict[str, Any]], projects: list[dict[str, Any]]) -> bytes:
    return as_zip(
        {"conversations.json": as_json(conversations), "projects.json": as_json(projects), "users.json": b"[]"}
    )
