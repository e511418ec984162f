from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict

from accounts import selectors
from accounts.models import User
from accounts.services import (
    TOKEN_NAME_MAX,
    api_token_create,
    api_token_revoke,
    user_set_language,
    user_set_memory_enabled,
)

router = Router(tags=["me"])


class MeOut(Schema):
    id: int
    username: str
    email: str
    memory_enabled: bool
    language: str = Field(description="The interface language: “en”, “zh-hans”, or “” to follow the browser.")


class MePatch(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    memory_enabled: bool | None = None
    language: Literal["en", "zh-hans", ""] | None = Field(
        None, description="“en” or “zh-hans”; “” follows the browser (Accept-Language)."
    )


class MeErrorOut(Schema):
    detail: str


@router.get("/me", response=MeOut)
def me_get(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


@router.patch("/me", response={200: MeOut, 422: MeErrorOut})
def me_patch(request: HttpRequest, payload: MePatch) -> Any:
    user: User = request.user  # type: ignore[assignment]
    if payload.memory_enabled is not None:
        user = user_set_memory_enabled(user=user, enabled=payload.memory_enabled)
    if payload.language is not None:
        user = user_set_language(user=user, language=payload.language)
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

    name: str = Field("", max_length=TOKEN_NAME_MAX)
    expires_at: datetime | None = Field(None, description="When it stops working; omit for never.")


class TokenErrorOut(Schema):
    detail: str


@router.get("/tokens", response=list[TokenOut], tags=["tokens"], summary="Your API tokens, with their last use")
def token_list(request: HttpRequest) -> Any:
    return selectors.api_token_list(user=request.user)  # type: ignore[arg-type]


@router.post("/tokens", response={201: TokenCreatedOut, 400: TokenErrorOut}, tags=["tokens"])
def token_create(request: HttpRequest, payload: TokenIn) -> Any:
    token, plain = api_token_create(user=request.user, name=payload.name, expires_at=payload.expires_at)  # type: ignore[arg-type]
    return Status(201, {**TokenOut.from_orm(token).model_dump(), "token": plain})


@router.delete("/tokens/{token_id}", response={204: None}, tags=["tokens"], summary="Revoke a token")
def token_revoke(request: HttpRequest, token_id: int) -> Any:
    api_token_revoke(token=selectors.api_token_get_for_user(user=request.user, token_id=token_id))  # type: ignore[arg-type]
    return Status(204, None)
