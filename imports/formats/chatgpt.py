"""ChatGPT's data export: `conversations.json` is a list of conversations, each a message **tree**.

    {"id" | "conversation_id": "…", "title": "…", "create_time": 1714550400.5, "update_time": …,
     "current_node": "node-9", "conversation_template_id": "g-p-…" | null, "gizmo_type": …,
     "mapping": {"node-1": {"id": "node-1", "message": {…} | null, "parent": null, "children": ["node-2"]}, …}}

A message: `author.role` (user, assistant, system, tool), `recipient` ("all", or a tool's name such as
"python", "browser", "dalle.text2im"), `content.content_type` with `parts` (text, multimodal_text: strings or
objects such as image_asset_pointer) or `text` (code, execution_output), `create_time`, and `metadata`
(`is_visually_hidden_from_conversation` marks hidden system and context messages).

The chat the user saw is the path from `current_node` up through `parent` to the root, read root first;
other children are edits and regenerations. A project's chats carry its `conversation_template_id`
("g-p-…"); a custom GPT's chats carry one too, with `gizmo_type` "gpt", and are not a project.
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
    from_unix,
    messages_in,
    placeholder,
    source_id,
    text_of,
)

HEADER = Header(title="title", created="create_time", updated="update_time", time=from_unix)
SHOWN_ROLES = ("user", "assistant")
# Content the ChatGPT page does not show as a message: the model's reasoning, tool output and browsing,
# the custom instructions and memory it was given, and error records.
REASONING = frozenset({"thoughts", "reasoning_recap"})
NOT_SHOWN = frozenset(
    {
        "user_editable_context",
        "model_editable_context",
        "system_error",
        "tether_browsing_display",
        "tether_quote",
        "execution_output",
        "computer_output",
        "sonic_webpage",
    }
)
PART_PLACEHOLDERS = {
    "image_asset_pointer": "image",
    "audio_asset_pointer": "audio",
    "real_time_user_audio_video_asset_pointer": "audio",
    "video_container_asset_pointer": "video",
    "file_asset_pointer": "file",
}


def conversation(raw: Any) -> Chat:
    mapping = messages_in(raw, "mapping", dict, "message tree")
    source = source_id(raw.get("conversation_id") or raw.get("id"))
    turns, dropped = _turns(mapping, _path(mapping, raw.get("current_node")))
    return HEADER.chat(raw, source=source, turns=turns, project_key=_project(raw), dropped=dropped)


def _turns(mapping: dict[str, Any], path: list[dict[str, Any]]) -> tuple[list[Turn], Counter[str]]:
    """The turns along the path, and what was left out: the other branches' messages, and what `_turn` drops."""
    dropped: Counter[str] = Counter()
    dropped["branches"] = sum(1 for node in mapping.values() if _message(node) is not None) - len(
        [n for n in path if _message(n) is not None]
    )
    turns = [turn for node in path if (turn := _turn(_message(node), dropped)) is not None]
    return turns, dropped


def _project(raw: dict[str, Any]) -> str:
    template = text_of(raw.get("conversation_template_id")).strip()
    if not template or len(template) > ID_MAX or raw.get("gizmo_type") == "gpt":
        return ""
    return template


def _message(node: Any) -> dict[str, Any] | None:
    message = node.get("message") if isinstance(node, dict) else None
    return message if isinstance(message, dict) else None


def _path(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root down to `current_node` (or, without one, down the last children)."""
    if not isinstance(current, str) or current not in mapping:
        current = _last_leaf(mapping)
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise Unreadable("its message tree has a cycle")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        path.append(node)
        node_id = node.get("parent")
    path.reverse()
    return path


def _last_leaf(mapping: dict[str, Any]) -> str | None:
    roots = [key for key, node in mapping.items() if isinstance(node, dict) and node.get("parent") not in mapping]
    node_id = roots[0] if roots else None
    seen: set[str] = set()
    while node_id is not None:
        if node_id in seen:
            raise Unreadable("its message tree has a cycle")
        seen.add(node_id)
        children = _children(mapping, node_id)
        if not children:
            return node_id
        node_id = children[-1]
    return None


def _children(mapping: dict[str, Any], node_id: str) -> list[str]:
    return [c for c in (mapping[node_id].get("children") or []) if isinstance(c, str) and c in mapping]


def _turn(message: dict[str, Any] | None, dropped: Counter[str]) -> Turn | None:
    if message is None:
        return None  # the tree's root holds no message
    author, content = _dict(message.get("author")), _dict(message.get("content"))
    left_out = _left_out(message)
    text = "" if left_out else _text(content).strip()
    if left_out or not text:
        dropped[left_out or "empty"] += 1
        return None
    return Turn(role=str(author.get("role")), content=text, created_at=from_unix(message.get("create_time")))


def _left_out(message: dict[str, Any]) -> str:
    """Why a message is not imported ("tool", "reasoning", "hidden"), or "" when it is."""
    author, metadata, content = (_dict(message.get(key)) for key in ("author", "metadata", "content"))
    role = author.get("role")
    kind = content.get("content_type")
    if role == "tool" or (role == "assistant" and message.get("recipient") not in (None, "all")):
        return "tool"
    if kind in REASONING or "analysis" in (message.get("channel"), metadata.get("channel")):
        return "reasoning"
    if role not in SHOWN_ROLES or metadata.get("is_visually_hidden_from_conversation") or kind in NOT_SHOWN:
        return "hidden"
    return ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(content: dict[str, Any]) -> str:
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text") or (kind is None and "parts" in content):
        return _parts(content)
    if kind == "code":
        return _code(content)
    if isinstance(content.get("text"), str):
        return text_of(content.get("text"))
    return placeholder(str(kind) if isinstance(kind, str) and kind else "content")


def _parts(content: dict[str, Any]) -> str:
    parts: list[Any] = content["parts"] if isinstance(content.get("parts"), list) else []
    return "\n".join(piece for piece in (_part(p) for p in parts) if piece)


def _code(content: dict[str, Any]) -> str:
    language = text_of(content.get("language"))
    language = "" if language == "unknown" else language
    return f"```{language}\n{text_of(content.get('text')).strip()}\n```"


def _part(part: Any) -> str:
    if isinstance(part, str):
        return part.replace("\x00", "")
    if not isinstance(part, dict):
        return ""
    kind = part.get("content_type")
    if kind == "audio_transcription" or (isinstance(part.get("text"), str) and kind not in PART_PLACEHOLDERS):
        return text_of(part.get("text"))
    return placeholder(PART_PLACEHOLDERS.get(str(kind), "attachment"))
