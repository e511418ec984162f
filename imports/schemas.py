"""The API's shapes for imports (SPEC §9, "Import")."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from imports.models import ChatImport


class ImportCounts(Schema):
    conversations: int = Field(description="Conversations imported (for a preview: that will be imported).")
    messages: int = Field(description="Messages imported (for a preview: that will be imported).")
    skipped: int = Field(description="Conversations skipped: unreadable, empty, or already imported.")


class ImportError_(Schema):
    id: str = Field(description="The conversation's id in the export, when it could be read.")
    title: str = ""
    reason: str


class LearnOut(Schema):
    status: str = Field(description='"" (not started), "queued", "running", "done", "stopped" or "failed".')
    progress: float = Field(ge=0, le=1)
    done: int
    total: int
    suggested: int = Field(description="Suggestions made so far (origin imported).")
    estimate: dict[str, int] | None = Field(
        None, description="What a pass would cost: messages, judge_calls, characters (done imports only)."
    )
    error: str = ""


class ImportOut(Schema):
    id: int
    kind: Literal["export", "paste"]
    status: Literal["previewed", "queued", "running", "done", "failed"]
    source: Literal["chatgpt", "claude"]
    filename: str
    size: int
    counts: ImportCounts
    progress: float = Field(ge=0, le=1, description="The share of the export read so far (1 when done).")
    errors: list[ImportError_ | dict[str, Any]] = Field(description="What was skipped and why.")
    preview: dict[str, Any] = Field(
        description="What the check found: conversations, messages, first/last dates, projects, skipped (with "
        "reasons), skipped_count, dropped (messages left out by reason), already_imported."
    )
    learn: LearnOut
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class PasteIn(Schema):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=50_000, description="What the old assistant printed: one fact a line.")
    source: Literal["chatgpt", "claude"] = "chatgpt"


class RemovedOut(Schema):
    conversations: int = Field(description="Conversations deleted.")
    memories: int = Field(description="Memories learned from them deleted (every version, suggestions too).")
    projects: int = Field(description="Projects the import created, deleted because nothing else was in them.")


def import_out(row: ChatImport, *, estimate: dict[str, int] | None = None) -> dict[str, Any]:
    if row.status in (ChatImport.Status.PREVIEWED, ChatImport.Status.QUEUED):
        found = row.preview or {}
        counts = {
            "conversations": max(0, int(found.get("conversations", 0)) - int(found.get("already_imported", 0))),
            "messages": int(found.get("messages", 0)),
            "skipped": int(found.get("skipped_count", 0)) + int(found.get("already_imported", 0)),
        }
    else:
        counts = {"conversations": row.conversations, "messages": row.messages, "skipped": row.skipped}
    return {
        "id": row.pk,
        "kind": row.kind,
        "status": row.status,
        "source": row.source,
        "filename": row.filename,
        "size": row.size,
        "counts": counts,
        "progress": row.progress,
        "errors": row.errors,
        "preview": row.preview,
        "learn": {
            "status": row.learn_status,
            "progress": row.learn_progress,
            "done": row.learn_done,
            "total": row.learn_total,
            "suggested": row.learn_suggested,
            "estimate": estimate,
            "error": row.learn_error,
        },
        "created_at": row.created_at,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
    }
