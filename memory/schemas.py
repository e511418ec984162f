from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import AwareDatetime, ConfigDict, StrictBool

from chat.models import Message
from core.api_errors import NOT_BLANK, optional_id
from memory.models import CONTENT_MAX, Memory
from memory.selectors import memory_status, source_excerpt


class MemorySourceOut(Schema):
    """A message a memory was learned from, read from a chat.models.Message."""

    message_id: int
    conversation_id: UUID
    excerpt: str

    @staticmethod
    def resolve_message_id(message: Message) -> int:
        return message.pk

    @staticmethod
    def resolve_excerpt(message: Message) -> str:
        return source_excerpt(message)


class MemoryOut(Schema):
    """The public shape of a memory (SPEC §5) everywhere: API answers and the export (API and download).
    Read from a row of selectors.memory_list / memory_get_for_user (annotated, sources prefetched)."""

    id: int
    content: str
    origin: str
    created_at: datetime
    invalid_at: datetime | None
    invalid_reason: str
    supersedes: int | None
    superseded_by: int | None
    sources: list[MemorySourceOut]
    # SPEC §8 extensions.
    status: Literal["active", "suggested", "invalid"] = Field(
        description="suggested: learned, waiting for Keep (confirm) or Discard (DELETE)"
    )
    pinned: bool
    key: str = Field(description="The single-valued preference it holds (reply_language, units, …), or empty")
    sensitive: bool
    expires_at: datetime | None = Field(description="End of a time-bound fact; out of the block from then on")
    # When a reply's memory block last held it (SPEC §8 "Recall"), or a connected tool read it; null until then.
    last_used_at: datetime | None
    # SPEC §9: its scope.
    project_id: int | None = Field(description="The project it is about, or null: about you, everywhere")
    client: str = Field(description='The connected tool that proposed it (origin "client"), or empty')
    merged_from: list[int] = Field(default_factory=list, description="The memories an accepted tidy-up merged into it")

    @staticmethod
    def resolve_status(memory: Memory) -> str:
        return memory_status(memory)

    @staticmethod
    def resolve_supersedes(memory: Memory) -> int | None:
        return getattr(memory, "supersedes_id", None)

    @staticmethod
    def resolve_superseded_by(memory: Memory) -> int | None:
        return memory.superseded_by_id


class MemoryReadOut(Schema):
    """A connected tool's read of the memory (the MCP server or /v1), through one of the user's tokens."""

    client: str = Field(description="The program: its MCP clientInfo name, or its User-Agent")
    kind: Literal["mcp", "v1"]
    token_id: int | None = Field(description="The token it used; null once the token is revoked")
    token_name: str = Field(description="The token's name (or prefix) when it read")
    at: datetime

    @staticmethod
    def resolve_token_name(access: Any) -> str:
        return str(access.token_label)


class MemoryDetailOut(MemoryOut):
    reads: list[MemoryReadOut] = Field(description="Its latest reads by connected tools (at most 10, newest first)")

    @staticmethod
    def resolve_reads(memory: Memory) -> list[Any]:
        return list(getattr(memory, "reads_shown", []))


class MemoryIn(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    # memory.services.memory_content_clean checks the same again (after collapsing white space), for callers
    # other than the API.
    content: str = Field(
        ...,
        min_length=1,
        max_length=CONTENT_MAX,
        pattern=NOT_BLANK,
        description="One sentence about you: not blank, no NUL character; runs of white space become one space.",
    )
    project_id: int | None = optional_id("A project of yours it is about (null: about you, everywhere)")


class MemoryPatch(Schema):
    """Any subset: only a change of `content` makes a new version; `expires_at` null clears the end date."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(
        None,
        min_length=1,
        max_length=CONTENT_MAX,
        pattern=NOT_BLANK,
        description="A new wording (makes a new version): not blank, no NUL character.",
    )
    pinned: StrictBool | None = None
    expires_at: AwareDatetime | None = Field(
        None, description="Any future moment with its time zone, or null for no end date"
    )
    project_id: int | None = optional_id(
        "Move it to a project of yours (null: about you, everywhere); the move makes a new version, "
        "the old one kept in history (restorable)"
    )


class MemoryListQuery(Schema):
    status: Literal["active", "invalid", "suggested", "all"] = Field(
        "active", description="all = active + invalid + suggested"
    )
    project: str | None = Field(
        None,
        pattern=r"^(user|[1-9][0-9]{0,17})$",
        description="Only one scope: a project's id (another user's answers 404), or user for those about you",
    )


class ForgetAllOut(Schema):
    forgotten: int
    purged: bool


class MemoryExportOut(Schema):
    user: str
    exported_at: datetime
    memory_enabled: bool
    active: int
    memories: list[MemoryOut]
