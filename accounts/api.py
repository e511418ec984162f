from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from ninja.responses import Status
from pydantic import AwareDatetime, ConfigDict, StrictBool

from accounts import selectors
from accounts.models import User
from accounts.services import (
    TOKEN_NAME_MAX,
    api_token_create,
    api_token_revoke,
    user_set_memory_enabled,
)
from config.api_errors import AUTH_ERRORS, BODY_ERRORS, ID_MAX, NO_NUL, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS

router = Router(tags=["me"])


class MeOut(Schema):
    id: int
    username: str
    email: str
    memory_enabled: bool


class MePatch(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    memory_enabled: StrictBool | None = None  # JSON true or false, not 0 or "yes", as the document says


@router.get("/me", response={200: MeOut, **AUTH_ERRORS})
def me_get(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


@router.patch("/me", response={200: MeOut, **WRITE_ERRORS, **BODY_ERRORS})
def me_patch(request: HttpRequest, payload: MePatch) -> User:
    user: User = request.user  # type: ignore[assignment]
    if payload.memory_enabled is not None:
        user = user_set_memory_enabled(user=user, enabled=payload.memory_enabled)
    return user


# --- API tokens (the same as Settings → API tokens) ---


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="The token itself; shown only in this answer.")


class TokenIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "", max_length=TOKEN_NAME_MAX, pattern=NO_NUL, description="A label for you; spaces are collapsed."
    )
    expires_at: AwareDatetime | None = Field(
        None, description="When it stops working, with its time zone: must be in the future (else 400). Omit for never."
    )


@router.get(
    "/tokens",
    response={200: list[TokenOut], **AUTH_ERRORS},
    tags=["tokens"],
    summary="Your API tokens, with their last use",
)
def token_list(request: HttpRequest) -> Any:
    return selectors.api_token_list(user=request.user)  # type: ignore[arg-type]


@router.post("/tokens", response={201: TokenCreatedOut, **WRITE_ERRORS, **BODY_ERRORS}, tags=["tokens"])
def token_create(request: HttpRequest, payload: TokenIn) -> Any:
    token, plain = api_token_create(user=request.user, name=payload.name, expires_at=payload.expires_at)  # type: ignore[arg-type]
    return Status(201, {**TokenOut.from_orm(token).model_dump(), "token": plain})


@router.delete(
    "/tokens/{token_id}",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    tags=["tokens"],
    summary="Revoke a token",
)
def token_revoke(request: HttpRequest, token_id: int = Path(..., ge=1, le=ID_MAX)) -> Any:
    api_token_revoke(token=selectors.api_token_get_for_user(user=request.user, token_id=token_id))  # type: ignore[arg-type]
    return Status(204, None)
