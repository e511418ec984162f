"""Claude's data export: `conversations.json` is a list of conversations, each a list of messages.

    {"uuid": "…", "name": "…", "created_at": "2024-05-01T10:00:00.000000Z", "updated_at": "…",
     "project_uuid": "…" (a project's chat; some exports nest it as "project": {"uuid", "name"}),
     "chat_messages": [{"uuid": "…", "sender": "human" | "assistant", "text": "…",
                        "content": [{"type": "text", "text": "…"}, {"type": "tool_use", "name", "input"},
                                    {"type": "tool_result", "content": […]}, {"type": "thinking", …}],
                        "attachments": [{"file_name", "extracted_content", …}], "files": [{"file_name"}],
                        "created_at": "…", "parent_message_uuid": "…"}]}

`projects.json` (beside it in the ZIP) lists the projects: `{"uuid", "name", …}`.

A message's words are its `text` content blocks (the older `text` field when there are none); tool calls and
their results, and the model's thinking, are not chat. Attachments and files become "[attachment: name]".
When messages name their parent (`parent_message_uuid`), the chat shown is the path from the last one up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from imports.formats import (
    ID_MAX,
    Chat,
    Header,
    Turn,
    Unreadable,
    from_iso,
    messages_in,
    placeholder,
    source_id,
    text_of,
)

HEADER = Header(title="name", created="created_at", updated="updated_at", time=from_iso)
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}
TOOL_BLOCKS = frozenset({"tool_use", "tool_result", "server_tool_use", "web_search_tool_result"})


def conversation(raw: Any) -> Chat:
    messages = messages_in(raw, "chat_messages", list, "message list")
    source = source_id(raw.get("uuid"))
    shown = _shown(messages)
    dropped: Counter[str] = Counter(branches=len(messages) - len(shown))
    turns = [turn for message in shown if (turn := _turn(message, dropped)) is not None]
    return HEADER.chat(raw, source=source, turns=turns, project_key=_project(raw), dropped=dropped)


def _project(raw: dict[str, Any]) -> str:
    key = raw.get("project_uuid")
    if not key and isinstance(raw.get("project"), dict):
        key = raw["project"].get("uuid")
    key = text_of(key).strip()
    return key if len(key) <= ID_MAX else ""


def project_names(raw: Any) -> tuple[str, str] | None:
    """One `projects.json` item as (uuid, name), or None."""
    if not isinstance(raw, dict):
        return None
    key, name = text_of(raw.get("uuid")).strip(), " ".join(text_of(raw.get("name")).split())
    return (key, name) if key and len(key) <= ID_MAX else None


def _shown(messages: list[Any]) -> list[dict[str, Any]]:
    """The messages of the branch shown: all of them, unless they name parents (then the path to the last)."""
    rows = [m for m in messages if isinstance(m, dict)]
    if not rows or not any(isinstance(m.get("parent_message_uuid"), str) for m in rows):
        return rows
    return _path_to(rows[-1], {m["uuid"]: m for m in rows if isinstance(m.get("uuid"), str)})


def _path_to(last: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages from the root down to `last`, following each one's parent."""
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    message: dict[str, Any] | None = last
    while message is not None:
        key = message.get("uuid")
        if isinstance(key, str):
            if key in seen:
                raise Unreadable("its message tree has a cycle")
            seen.add(key)
        path.append(message)
        parent = message.get("parent_message_uuid")
        message = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def _turn(message: dict[str, Any], dropped: Counter[str]) -> Turn | None:
    role = ROLES.get(str(message.get("sender")))
    if role is None:
        dropped["hidden"] += 1
        return None
    pieces = [*_texts(message, dropped), *_attachments(message)]
    text = "\n\n".join(p.strip() for p in pieces if p.strip())
    if not text:
        dropped["empty"] += 1
        return None
    return Turn(role=role, content=text, created_at=from_iso(message.get("created_at")))


def _texts(message: dict[str, Any], dropped: Counter[str]) -> list[str]:
    """The message's text: its content blocks, or its plain `text` when it has none."""
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        return [piece for block in blocks if (piece := _block(block, dropped))]
    return [text_of(message.get("text"))]


def _attachments(message: dict[str, Any]) -> list[str]:
    """A placeholder for each attachment or file (their content is not in the export's text)."""
    pieces = []
    for key in ("attachments", "files"):
        for item in message.get(key) or []:
            if isinstance(item, dict):
                name = " ".join(text_of(item.get("file_name")).split())
                pieces.append(placeholder(f"attachment: {name}" if name else "attachment"))
    return pieces


def _block(block: Any, dropped: Counter[str]) -> str:
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return text_of(block.get("text"))
    if kind in TOOL_BLOCKS:
        dropped["tool"] += 1
        return ""
    if kind in ("thinking", "redacted_thinking"):
        dropped["reasoning"] += 1
        return ""
    return placeholder(str(kind) if isinstance(kind, str) and kind else "content")
