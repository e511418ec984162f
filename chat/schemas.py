from __future__ import annotations

from datetime import datetime
from uuid import UUID

from ninja import Field, Schema


class ConversationOut(Schema):
    id: UUID
    title: str
    temporary: bool
    created_at: datetime
    updated_at: datetime


class ConversationIn(Schema):
    title: str = Field("", max_length=200)
    temporary: bool = False


class ConversationPatch(Schema):
    title: str = Field(..., min_length=1, max_length=200)


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


class MessageIn(Schema):
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
