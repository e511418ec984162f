from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from ninja import Schema
from pydantic import ConfigDict


class MemorySourceOut(Schema):
    message_id: int
    conversation_id: UUID
    excerpt: str


class MemoryOut(Schema):
    id: int
    content: str
    origin: str
    created_at: datetime
    invalid_at: datetime | None
    invalid_reason: str
    supersedes: int | None
    superseded_by: int | None
    sources: list[MemorySourceOut]


class MemoryIn(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    # Blankness and length are checked by memory.services.memory_content_clean for one clear message.
    content: str


class MemoryListQuery(Schema):
    status: Literal["active", "invalid", "all"] = "active"


class ForgetAllOut(Schema):
    forgotten: int
    purged: bool


class MemoryExportOut(Schema):
    user: str
    exported_at: datetime
    memory_enabled: bool
    active: int
    memories: list[MemoryOut]


class ErrorOut(Schema):
    detail: str
