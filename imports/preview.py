"""The check before anything is written, and what it found: one streamed pass over the conversations file.

`inspect(export, source=…)` reads every conversation the way the import will (imports.formats), so a file
that is not UTF-8 or JSON, is cut short, or is the wrong export is refused at once (reader.Rejected), and the
preview says how many conversations and messages will land, over which dates, in which projects, and
what will be skipped and why. Nothing but counts, dates, ids and names is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from imports import reader
from imports.formats import CHATGPT, CLAUDE, Chat, Unreadable, chatgpt, claude

PARSERS: dict[str, Callable[[Any], Chat]] = {CHATGPT: chatgpt.conversation, CLAUDE: claude.conversation}
SKIPPED_LISTED = 50  # the preview names the first few skipped conversations; the count covers all


def source_of(item: Any) -> str | None:
    if isinstance(item, dict):
        if "mapping" in item:
            return CHATGPT
        if "chat_messages" in item:
            return CLAUDE
    return None


@dataclass
class Preview:
    source: str
    conversations: int = 0
    messages: int = 0
    first: datetime | None = None
    last: datetime | None = None
    # Project key -> [name ("" when the export does not name it), conversations].
    projects: dict[str, list[Any]] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    skipped_count: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    source_ids: list[str] = field(default_factory=list)

    def add(self, chat: Chat) -> None:
        self.conversations += 1
        self.messages += len(chat.turns)
        self.dropped.update(chat.dropped)
        self.source_ids.append(chat.source_id)
        for moment in (chat.created_at, chat.updated_at):
            if moment is not None:
                self.first = moment if self.first is None else min(self.first, moment)
                self.last = moment if self.last is None else max(self.last, moment)
        if chat.project_key:
            self.projects.setdefault(chat.project_key, ["", 0])[1] += 1

    def skip(self, *, source_id: str, title: str, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < SKIPPED_LISTED:
            self.skipped.append({"id": source_id, "title": title, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "first": self.first.isoformat() if self.first else None,
            "last": self.last.isoformat() if self.last else None,
            "projects": [{"key": k, "name": v[0], "conversations": v[1]} for k, v in self.projects.items()],
            "skipped": self.skipped,
            "skipped_count": self.skipped_count,
            "dropped": dict(self.dropped),
        }


def conversations(export: reader.Export) -> Iterator[tuple[Any, reader.CountingReader]]:
    """Each raw conversation object of the export, with the stream (its count is the progress)."""
    with reader.member_stream(export, export.member) as stream:
        for item in reader.json_items(stream, what=reader.CONVERSATIONS):
            yield item, stream


def parse(item: Any, source: str) -> Chat:
    """One conversation as a Chat, or Unreadable; an empty one is Unreadable too."""
    chat = PARSERS[source](item)
    if not chat.turns:
        raise Unreadable("no messages the user saw")
    return chat


def describe(item: Any) -> tuple[str, str]:
    """A skipped conversation's id and title, as far as they can be read."""
    if not isinstance(item, dict):
        return "", ""
    key = item.get("conversation_id") or item.get("id") or item.get("uuid") or ""
    title = item.get("title") or item.get("name") or ""
    return (str(key)[:200] if isinstance(key, str) else ""), (str(title)[:200] if isinstance(title, str) else "")


def inspect(export: reader.Export, *, source: str | None) -> Preview:
    preview: Preview | None = None
    for item, _stream in conversations(export):
        if preview is None:
            found = source_of(item)
            if found is None or (source and found != source):
                raise _wrong_export(source, found)
            preview = Preview(source=found)
        try:
            preview.add(parse(item, preview.source))
        except Unreadable as exc:
            key, title = describe(item)
            preview.skip(source_id=key, title=title, reason=str(exc))
    if preview is None:
        raise reader.Rejected(_("The export holds no conversations."))
    for key, name in project_names(export, preview.source).items():
        if key in preview.projects:
            preview.projects[key][0] = name
    return preview


def project_names(export: reader.Export, source: str) -> dict[str, str]:
    """Claude's projects.json: project uuid -> name (ChatGPT's export names none)."""
    if source != CLAUDE or not export.projects_member:
        return {}
    names: dict[str, str] = {}
    with reader.member_stream(export, export.projects_member) as stream:
        for item in reader.json_items(stream, what=reader.PROJECTS):
            pair = claude.project_names(item)
            if pair is not None:
                names[pair[0]] = pair[1]
    return names


def _wrong_export(source: str | None, found: str | None) -> reader.Rejected:
    names = {CHATGPT: "ChatGPT", CLAUDE: "Claude"}
    if found is None:
        return reader.Rejected(
            _(
                "This is not a ChatGPT or Claude export: its conversations have neither a message tree "
                "nor a message list."
            )
        )
    return reader.Rejected(
        _("This is a %(found)s export, not a %(expected)s one.")
        % {"found": names[found], "expected": names[source or found]}
    )
