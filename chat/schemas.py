from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from django.conf import settings
from ninja import Field, Schema
from pydantic import ConfigDict, StrictBool, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from chat.llm import catalogue
from chat.models import Conversation, Project
from core.api_errors import NO_NUL, NOT_BLANK, OFFSET_MAX, ErrorOut, optional_id

TITLE_MAX = 200
MODEL_MAX = 200
# A project filter in a query: a project's id, or a word for "no project" ("none" for conversations, "user"
# for memories).
PROJECT_FILTER = r"^(none|[1-9][0-9]{0,17})$"
PROJECT_ID = optional_id("A project of yours (null: none); another's answers 404.")


class ConversationOut(Schema):
    id: UUID
    title: str
    temporary: bool
    model: str = Field(description="The chat model its turns use (one of `GET /api/models`).")
    pinned: bool = Field(description="Kept at the top of the conversation list.")
    created_at: datetime

    @staticmethod
    def resolve_model(obj: Conversation) -> str:
        return catalogue.conversation_model(obj.model)

    updated_at: datetime
    imported_from: str = Field(
        description='"chatgpt" or "claude" for a conversation imported from an export; "" otherwise.'
    )
    imported_id: str = Field(description='The conversation\'s id in the export it was imported from; "" otherwise.')
    # SPEC §9: the project it belongs to, or null.
    project_id: int | None = Field(None, description="The project it belongs to (null: none).")


class ConversationDetailOut(ConversationOut):
    # The agent state's estimated size in tokens, and how often its oldest part was summarized.
    context_tokens: int
    compactions: int


class ConversationPage(Schema):
    limit: int | None = Field(None, ge=1, le=100, description="Page size; without it and offset, the whole list.")
    offset: int = Field(0, ge=0, le=OFFSET_MAX, description="How many conversations to skip.")
    project: str | None = Field(
        None,
        pattern=PROJECT_FILTER,
        description='Only the conversations of this project (its id), or "none" for those in no project.',
    )


class ExportFormat(Schema):
    format: Literal["markdown"] = Field("markdown", description="The file's format: `markdown`.")


class ConversationIn(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    title: str = Field("", max_length=TITLE_MAX, pattern=NO_NUL, description="Leading and trailing spaces are removed.")
    # Strict: JSON true or false, not 0 or "yes", as the document says.
    temporary: StrictBool = Field(False, description="Nothing is learned from a temporary conversation.")
    model: str = Field(
        "", max_length=MODEL_MAX, description="A chat model of `GET /api/models` (else the default); 422 otherwise."
    )
    project_id: int | None = PROJECT_ID


class ConversationPatch(Schema):
    """Any of: a new title, another model (used from the next turn on), pinned or not, and the project it is
    in (`project_id`; null: out of any). A field left out is left as it is (as is a field other than
    `project_id` sent as null)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    # Constraints on the string itself: with None beside it, a bare Field's would also apply to None.
    title: Annotated[str, Field(min_length=1, max_length=TITLE_MAX, pattern=NOT_BLANK)] | SkipJsonSchema[None] = None
    model: Annotated[str, Field(min_length=1, max_length=MODEL_MAX)] | SkipJsonSchema[None] = Field(
        None, description="A chat model of `GET /api/models`; 422 otherwise."
    )
    pinned: StrictBool | SkipJsonSchema[None] = Field(None, description="Kept at the top of the conversation list.")
    project_id: int | None = PROJECT_ID

    @field_validator("title")
    @classmethod
    def title_not_blank(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("Title is empty.")
        return value.strip()

    @model_validator(mode="after")
    def something_to_change(self) -> ConversationPatch:
        moved = "project_id" in self.model_fields_set
        if self.title is None and self.model is None and self.pinned is None and not moved:
            raise ValueError("Give at least one of title, model, pinned and project_id.")
        return self


class ProjectOut(Schema):
    id: int
    name: str
    instructions: str
    memory_mode: str = Field(description="shared | isolated | off")
    created_at: datetime


class ProjectIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=Project.NAME_MAX, pattern=NOT_BLANK)
    instructions: str = Field(
        "",
        max_length=Project.INSTRUCTIONS_MAX,
        pattern=NO_NUL,
        description="Sent with every turn of its conversations, like a note beside the system prompt.",
    )
    memory_mode: Literal["shared", "isolated", "off"] = Field(
        "shared",
        description="shared: its chats use and learn your memories and its own; isolated: only its own; off: none.",
    )


class ProjectPatch(Schema):
    """Any subset of name, instructions and memory mode."""

    model_config = ConfigDict(extra="forbid")

    # Optional but never null (a project always has a name and a mode): the defaults mean "no change".
    name: str = Field(None, min_length=1, max_length=Project.NAME_MAX, pattern=NOT_BLANK)  # type: ignore[assignment]
    instructions: str | None = Field(
        None, max_length=Project.INSTRUCTIONS_MAX, pattern=NO_NUL, description="null or empty: none"
    )
    memory_mode: Literal["shared", "isolated", "off"] = None  # type: ignore[assignment]


class ProjectDeleteQuery(Schema):
    memories: Literal["delete", "move"] = Field(
        "move",
        description="move (default): its conversations stay, out of any project, and its memories become yours, "
        "with their history; delete: its conversations and memories are deleted permanently, with every copy.",
    )


class ChatModelOut(Schema):
    id: str = Field(description="What `model` on a conversation takes.")
    label: str = Field(description="How the page names it.")
    default: bool = Field(description="The model of a conversation that names none.")


class ChatModelList(Schema):
    models: list[ChatModelOut]


class AlternativeOut(Schema):
    """Another version of a regenerated reply (chat.versions)."""

    version: int
    content: str
    status: str
    error: str = ""
    created_at: datetime | None = None


class MessageOut(Schema):
    id: int
    conversation_id: UUID
    role: str
    content: str
    status: str
    error: str
    version: int = Field(1, description="The shown version's number, among it and its `alternatives`.")
    alternatives: list[AlternativeOut] = Field(
        default_factory=list, description="A regenerated reply's other versions, oldest first; [] otherwise."
    )
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

    # chat.services.message_content_clean checks the same again, for callers other than the API.
    content: str = Field(
        ...,
        min_length=1,
        max_length=settings.CHAT_MAX_MESSAGE_CHARS,
        pattern=NOT_BLANK,
        description="The user's message: not blank, no NUL character.",
    )


class VersionIn(Schema):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(..., ge=1, le=32767, description="The number of the version to show.")


class TurnOut(Schema):
    user_message: MessageOut
    assistant_message: MessageOut


class TurnErrorOut(ErrorOut):
    """A turn whose reply failed (502): the error, and both messages as saved (the reply with status `error`;
    null when the turn stopped before its reply was written)."""

    user_message: MessageOut
    assistant_message: MessageOut | None


# --- The server-sent events of a turn (Accept: text/event-stream) -------------------------------------------
# The wire format chat/api.py writes (`event: <name>` and `data: <JSON>` per event), as the OpenAPI document
# describes it: one schema per event, each event's `data` a JSON text with a schema of its own.

_MESSAGE: dict[str, object] = {"$ref": "#/components/schemas/MessageOut"}
_BOTH_MESSAGES: dict[str, object] = {"$ref": "#/components/schemas/TurnOut"}


def _event(name: str, data: dict[str, object], description: str) -> dict[str, object]:
    return {
        "type": "object",
        "title": f"{name} event",
        "description": description,
        "properties": {
            "event": {"const": name},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
        },
        "required": ["event", "data"],
    }


def _object(**properties: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": list(properties)}


TURN_EVENT_STREAM = {
    "description": (
        "With `Accept: text/event-stream`: `start`, then any number of `waiting`, `delta` and `tool`, then "
        "`done` or `error`."
    ),
    "oneOf": [
        _event("start", _BOTH_MESSAGES, "The saved user message and the (empty, streaming) assistant message."),
        _event(
            "waiting",
            _object(ahead={"type": "integer", "minimum": 0}),
            "The request waits its turn in the provider's queue (LLM_MAX_CONCURRENCY): how many are ahead; 0 "
            "once it is sent.",
        ),
        _event("delta", _object(text={"type": "string"}), "The next piece of the reply's text."),
        _event("tool", _object(name={"type": "string"}), "A tool runs (its name)."),
        _event("done", _BOTH_MESSAGES, "Both messages as saved: the reply is complete."),
        _event(
            "error",
            _object(
                detail={"type": "string"},
                assistant_message={"anyOf": [_MESSAGE, {"type": "object", "maxProperties": 0}]},
            ),
            "The reply failed or was stopped (its status is then `error` or `interrupted`); the reply as saved, "
            "or `{}` when none was written.",
        ),
    ],
}
