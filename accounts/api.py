from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.utils.translation import gettext as _
from ninja import Field, Path, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import AwareDatetime, ConfigDict, StrictBool

from accounts import export, selectors
from accounts.auth import is_token_request
from accounts.http import AuthedHttpRequest
from accounts.models import User
from accounts.scopes import annotate_tokens
from accounts.services import (
    TOKEN_NAME_MAX,
    AccountDeleteRefused,
    account_delete,
    api_token_create,
    api_token_revoke,
    user_set_language,
    user_set_memory_enabled,
    user_set_memory_review,
)
from accounts.throttle import client_address, password_check
from core.api_errors import AUTH_ERRORS, BODY_ERRORS, ID_MAX, NO_NUL, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS, optional_id

router = Router(tags=["me"])


class MeOut(Schema):
    id: int
    username: str
    email: str
    memory_enabled: bool
    memory_review: Literal["auto", "sensitive", "all"] = Field(
        description="Which learned memories wait for Keep or Discard: none, sensitive ones, or all"
    )
    language: str = Field(description="The interface language: “en”, “zh-hans”, or “” to follow the browser.")


class MePatch(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    memory_enabled: StrictBool | None = None  # JSON true or false, not 0 or "yes", as the document says
    memory_review: Literal["auto", "sensitive", "all"] | None = None
    language: Literal["en", "zh-hans", ""] | None = Field(
        None, description="“en” or “zh-hans”; “” follows the browser (Accept-Language)."
    )


@router.get("/me", response={200: MeOut, **AUTH_ERRORS})
def me_get(request: AuthedHttpRequest) -> User:
    return request.user


@router.patch("/me", response={200: MeOut, **WRITE_ERRORS, **BODY_ERRORS})
def me_patch(request: AuthedHttpRequest, payload: MePatch) -> User:
    user = request.user
    if payload.memory_enabled is not None:
        user = user_set_memory_enabled(user=user, enabled=payload.memory_enabled)
    if payload.memory_review is not None:
        user = user_set_memory_review(user=user, review=payload.memory_review)
    if payload.language is not None:
        user = user_set_language(user=user, language=payload.language)
    return user


# --- Delete my account, download all my data (the same as Settings → Account; SPEC §8) ---


class AccountDeleteIn(Schema):
    model_config = ConfigDict(extra="forbid")

    password: str = Field(max_length=4096, pattern=NO_NUL, description="The account's password, to confirm.")


class ErrorOut(Schema):
    detail: str


@router.delete(
    "/me",
    response={204: None, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Delete my account and everything in it",
    description=(
        "Deletes, in one transaction: every conversation with its messages and agent state, every memory "
        "with its history and sources, the extraction records, API tokens and sessions. The account's "
        "tokens answer 401 from then on and its open chat sockets are closed. A wrong password answers "
        "403 and deletes nothing; 10 wrong passwords from one address answer 429 (with Retry-After) until "
        "the window ends. Database backups made before keep what they hold until they are replaced."
    ),
)
def me_delete(request: AuthedHttpRequest, payload: AccountDeleteIn) -> Any:
    try:
        account_delete(user=request.user, password=payload.password, address=client_address(request))
    except AccountDeleteRefused as exc:
        raise HttpError(403, str(exc)) from exc
    return Status(204, None)


class ExportOut(Schema):
    format: str = Field(description='"memora-export/1"')
    exported_at: datetime
    account: dict[str, Any] = Field(description="id, username, email, date_joined, last_login")
    settings: dict[str, Any] = Field(description="memory_enabled, memory_review, language")
    projects: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Every project: id, name, instructions, memory_mode, created_at, updated_at "
        "(conversations and memories name theirs by project_id)",
    )
    conversations: list[dict[str, Any]] = Field(
        description="Every conversation (temporary ones that still exist included): id, title, temporary, "
        "project_id, created_at, updated_at, messages [{id, role, content, status, error, memory_status, "
        "created_at}]"
    )
    memories: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Every memory, active, suggested and in history, with this release's fields and sources "
        "(present when the memory app is installed)",
    )


@router.get(
    "/me/export",
    response={200: ExportOut, **AUTH_ERRORS},
    summary="Download all my data (one JSON document, streamed)",
)
def me_export(request: AuthedHttpRequest) -> Any:
    return export.response(request, request.user)


# --- API tokens (the same as Settings → API tokens) ---


ScopeName = Literal["memory:read", "memory:propose", "memory:write", "chat"]


class TokenReadOut(Schema):
    """One access by the token's program that read memories (the MCP server or /v1)."""

    client: str = Field(description="The program: its MCP clientInfo name, or its User-Agent")
    kind: Literal["mcp", "v1"]
    memories: int = Field(description="How many memories it read")
    at: datetime


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    scopes: list[ScopeName] = Field(description="What the token may do; a token made without scopes has them all")
    project_id: int | None = Field(description="The project it is limited to, or null")
    last_client: str = Field(description="The program that used it last on /mcp or /v1, or empty")
    reads: list[TokenReadOut] = Field(
        default_factory=list, description="Its latest reads of memories (at most 10, newest first)"
    )

    @staticmethod
    def resolve_reads(token: Any) -> list[Any]:
        return list(getattr(token, "reads", []))


class TokenCreatedOut(TokenOut):
    token: str = Field(description="The token itself; shown only in this answer.")


class TokenIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "", max_length=TOKEN_NAME_MAX, pattern=NO_NUL, description="A label for you; spaces are collapsed."
    )
    scopes: list[ScopeName] | None = Field(
        None,
        min_length=1,
        max_length=4,
        description="What it may do: `memory:read` (search and list memories), `memory:propose` (propose "
        "memories, saved as suggestions), `memory:write` (save and forget memories), `chat` (the "
        "OpenAI-compatible endpoint and conversations). Omit for all of them.",
    )
    project_id: int | None = optional_id(
        "Limit it to one of your projects (another's or a missing one answers 404): it sees what a "
        "chat in that project would, over MCP and /v1. Omit for none."
    )
    expires_at: AwareDatetime | None = Field(
        None, description="When it stops working, with its time zone: must be in the future (else 400). Omit for never."
    )
    password: str | None = Field(
        None,
        max_length=4096,
        pattern=NO_NUL,
        description="The account's password: required when the request is authenticated by a token.",
    )


@router.get(
    "/tokens",
    response={200: list[TokenOut], **AUTH_ERRORS},
    tags=["tokens"],
    summary="Your API tokens, with their last use",
)
def token_list(request: AuthedHttpRequest) -> Any:
    return annotate_tokens(list(selectors.api_token_list(user=request.user)))


def _signed_in_or_password(request: AuthedHttpRequest, password: str | None) -> None:
    """Only the person may make or revoke tokens: the signed-in session, or a token request that also
    gives the password (throttled with every other password check: accounts.throttle.password_check).
    403 otherwise."""
    if not is_token_request(request):
        return
    user = request.user
    if password and password_check(user=user, password=password, address=client_address(request)):
        return
    raise HttpError(
        403,
        _(
            "An API token cannot create or revoke tokens: use Settings → API tokens while signed in, "
            "or send the account's password."
        ),
    )


@router.post(
    "/tokens",
    response={201: TokenCreatedOut, **WRITE_ERRORS, **BODY_ERRORS, **NOT_FOUND},
    tags=["tokens"],
    description="From the signed-in session; a token-authenticated request must also send `password` (else 403).",
)
def token_create(request: AuthedHttpRequest, payload: TokenIn) -> Any:
    _signed_in_or_password(request, payload.password)
    token, plain = api_token_create(
        user=request.user,
        name=payload.name,
        expires_at=payload.expires_at,
        scopes=list(payload.scopes) if payload.scopes is not None else None,
        project_id=payload.project_id,
    )
    return Status(201, {**TokenOut.model_validate(token).model_dump(), "token": plain})


@router.delete(
    "/tokens/{token_id}",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    tags=["tokens"],
    summary="Revoke a token",
    description="From the signed-in session only: a token-authenticated request answers 403.",
)
def token_revoke(request: AuthedHttpRequest, token_id: int = Path(..., ge=1, le=ID_MAX)) -> Any:
    _signed_in_or_password(request, None)
    api_token_revoke(token=selectors.api_token_get_for_user(user=request.user, token_id=token_id))
    return Status(204, None)
