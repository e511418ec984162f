"""What an export holds, as Memora imports it: one `Chat` per conversation, with only what the user saw.

Each product's module turns one conversation object of its `conversations.json` into a `Chat` (or raises
`Unreadable` with a short reason, and that conversation alone is skipped):

- chatgpt.py: ChatGPT's data export (a message tree per conversation, the branch shown is the path from
  `current_node` up to the root).
- claude.py: Claude's data export (a list of `chat_messages` per conversation, content blocks).

Both are liberal in what they accept: missing fields and nulls are tolerated, and content they do not
show as text becomes a short placeholder ("[image]"). What the user did not see is not chat: other
branches, hidden system messages, tool traffic and the model's private reasoning; they are counted in
`Chat.dropped` by reason so the preview can say what is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

CHATGPT = "chatgpt"
CLAUDE = "claude"
SOURCES = (CHATGPT, CLAUDE)
TITLE_MAX = 200
ID_MAX = 200

T = TypeVar("T")


class Unreadable(Exception):
    """One conversation that cannot be imported; the message says why (in English, for the report)."""


@dataclass
class Turn:
    role: str  # "user" | "assistant"
    content: str
    created_at: datetime | None


@dataclass
class Chat:
    source_id: str
    title: str
    created_at: datetime | None
    updated_at: datetime | None
    turns: list[Turn]
    # The export's own project id ("" outside a project): ChatGPT's conversation_template_id, Claude's project_uuid.
    project_key: str = ""
    # Messages left out, by reason ("branches", "hidden", "tool", "reasoning", "empty").
    dropped: Counter[str] = field(default_factory=Counter)


def from_unix(value: Any) -> datetime | None:
    """ChatGPT's times: Unix seconds (floats); anything else is unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def from_iso(value: Any) -> datetime | None:
    """Claude's times: ISO 8601 strings ("2024-05-01T10:00:00.123456Z"); anything else is unknown."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def text_of(value: Any) -> str:
    """A string field as text ("" for anything else); NUL characters removed (no database stores them)."""
    return value.replace("\x00", "") if isinstance(value, str) else ""


def monotonic(turns: list[Turn], start: datetime | None) -> None:
    """Give every turn a time that never goes back: the page orders messages by time, the export by
    position, and they must agree. A missing time takes the one before it (or the conversation's start)."""
    last = start
    for turn in turns:
        if turn.created_at is None or (last is not None and turn.created_at < last):
            turn.created_at = last
        last = turn.created_at


def messages_in(raw: Any, key: str, kind: type[T], what: str) -> T:
    """The messages of the conversation object `raw`, kept under `key` as a `kind`; Unreadable when `raw` is
    not a conversation object or holds none."""
    if not isinstance(raw, dict):
        raise Unreadable("not a conversation object")
    messages = raw.get(key)
    if not isinstance(messages, kind):
        raise Unreadable(f"no {what} ({key})")
    return messages


def source_id(value: Any) -> str:
    """The export's id of a conversation; Unreadable when it has none that fits."""
    found = text_of(value).strip()
    if not found or len(found) > ID_MAX:
        raise Unreadable("no usable conversation id")
    return found


@dataclass(frozen=True)
class Header:
    """Where an export keeps a conversation's title and times, and how it writes a time."""

    title: str
    created: str
    updated: str
    time: Callable[[Any], datetime | None]

    def chat(
        self, raw: dict[str, Any], *, source: str, turns: list[Turn], project_key: str, dropped: Counter[str]
    ) -> Chat:
        """The conversation `raw` as a Chat: its title and times found where this header says, its turns'
        times made monotonic, and its own times taken from them where the export leaves them out."""
        created, updated = self.time(raw.get(self.created)), self.time(raw.get(self.updated))
        monotonic(turns, created)
        if created is None and turns:
            created = turns[0].created_at
        return Chat(
            source_id=source,
            title=" ".join(text_of(raw.get(self.title)).split())[:TITLE_MAX],
            created_at=created,
            updated_at=updated or (turns[-1].created_at if turns else created),
            turns=turns,
            project_key=project_key,
            dropped=+dropped,
        )


def placeholder(kind: str) -> str:
    return f"[{kind}]"
