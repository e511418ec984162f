from __future__ import annotations

from datetime import datetime
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, field_validator


class ConversationOut(Schema):
    id: UUID
    title: str
    temporary: bool
    created_at: datetime
    updated_at: datetime


class ConversationDetailOut(ConversationOut):
    # The agent state's estimated size in tokens, and how often its oldest part was summarized.
    context_tokens: int
    compactions: int


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("Title contains a NUL character (\\u0000), which is not allowed.")
    return value


#: the largest `offset` a list takes: within every database's integer range (a larger one answers 422, not 500)
OFFSET_MAX = 2**31 - 1


class ConversationPage(Schema):
    limit: int | None = Field(None, ge=1, le=100)
    offset: int = Field(0, ge=0, le=OFFSET_MAX)


class ConversationIn(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    title: str = Field("", max_length=200)
    temporary: bool = False

    _title_has_no_nul = field_validator("title")(_no_nul)


class ConversationPatch(Schema):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(..., min_length=1, max_length=200)

    @field_validator("title")
    @classmethod
    def title_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Title is empty.")
        return _no_nul(value.strip())


class MessageOut(Schema):
    id: int
    conversation_id: UUID
    role: str
    content: str
    status: str
    error: str
    memory_status: str
    created_at: datetime
    updated_at: datetime
    # The ids of the memories the reply's memory block held (chat.extensions message annotators); [] for a
    # user message, or without the memory app.
    memories_used: list[int] = Field(default_factory=list)

    @staticmethod
    def resolve_memories_used(obj: object) -> list[int]:
        return list(getattr(obj, "memories_used", None) or [])


class MessageIn(Schema):
    model_config = ConfigDict(extra="forbid")

    # Length and blankness are checked by chat.services.message_content_clean for one clear message.
    content: str


class TurnOut(Schema):
    user_message: MessageOut
    assistant_message: MessageOut


class TurnErrorOut(Schema):
    detail: str
    user_message: MessageOut
    assistant_message: MessageOut


class ErrorOut(Schema):
    detail: str
