from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.contrib.auth import authenticate
from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja import Field, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import ConfigDict

from accounts import selectors
from accounts.auth import is_token_request
from accounts.models import User
from accounts.services import (
    TOKEN_NAME_MAX,
    api_token_create,
    api_token_revoke,
    user_set_memory_enabled,
    user_set_memory_review,
)

router = Router(tags=["me"])


class MeOut(Schema):
    id: int
    username: str
    email: str
    memory_enabled: bool
    memory_review: Literal["auto", "sensitive", "all"] = Field(
        description="Which learned memories wait for Keep or Discard: none, sensitive ones, or all"
    )


class MePatch(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    memory_enabled: bool | None = None
    memory_review: Literal["auto", "sensitive", "all"] | None = None


@router.get("/me", response=MeOut)
def me_get(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


@router.patch("/me", response=MeOut)
def me_patch(request: HttpRequest, payload: MePatch) -> User:
    user: User = request.user  # type: ignore[assignment]
    if payload.memory_enabled is not None:
        user = user_set_memory_enabled(user=user, enabled=payload.memory_enabled)
    if payload.memory_review is not None:
        user = user_set_memory_review(user=user, review=payload.memory_review)
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
    expires_at: datetime | None = Field(
        None, description="When it stops working (ISO 8601; without a timezone it is read as UTC); omit for never."
    )
    password: str | None = Field(
        None, description="The account's password: required when the request is authenticated by a token."
    )


class TokenErrorOut(Schema):
    detail: str


@router.get("/tokens", response=list[TokenOut], tags=["tokens"], summary="Your API tokens, with their last use")
def token_list(request: HttpRequest) -> Any:
    return selectors.api_token_list(user=request.user)  # type: ignore[arg-type]


def _signed_in_or_password(request: HttpRequest, password: str | None) -> None:
    """Only the person may make or revoke tokens: the signed-in session, or a token request that also
    gives the password (checked through django-axes, so guesses count as failed sign-ins). 403 otherwise."""
    if not is_token_request(request):
        return
    user: User = request.user  # type: ignore[assignment]
    if password and authenticate(request, username=user.get_username(), password=password) == user:
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
    response={201: TokenCreatedOut, 400: TokenErrorOut, 403: TokenErrorOut},
    tags=["tokens"],
    description="From the signed-in session; a token-authenticated request must also send `password` (else 403).",
)
def token_create(request: HttpRequest, payload: TokenIn) -> Any:
    _signed_in_or_password(request, payload.password)
    token, plain = api_token_create(user=request.user, name=payload.name, expires_at=payload.expires_at)  # type: ignore[arg-type]
    return Status(201, {**TokenOut.from_orm(token).model_dump(), "token": plain})


@router.delete(
    "/tokens/{token_id}",
    response={204: None, 403: TokenErrorOut, 404: TokenErrorOut},
    tags=["tokens"],
    summary="Revoke a token",
    description="From the signed-in session only: a token-authenticated request answers 403.",
)
def token_revoke(request: HttpRequest, token_id: int) -> Any:
    _signed_in_or_password(request, None)
    api_token_revoke(token=selectors.api_token_get_for_user(user=request.user, token_id=token_id))  # type: ignore[arg-type]
    return Status(204, None)
