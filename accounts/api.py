from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import ConfigDict

from accounts.models import User
from accounts.services import user_set_memory_enabled

router = Router(tags=["me"])


class MeOut(Schema):
    id: int
    username: str
    email: str
    memory_enabled: bool


class MePatch(Schema):
    model_config = ConfigDict(extra="forbid")  # an unknown field is a mistake: 422, not ignored

    memory_enabled: bool | None = None


@router.get("/me", response=MeOut)
def me_get(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


@router.patch("/me", response=MeOut)
def me_patch(request: HttpRequest, payload: MePatch) -> User:
    user: User = request.user  # type: ignore[assignment]
    if payload.memory_enabled is not None:
        user = user_set_memory_enabled(user=user, enabled=payload.memory_enabled)
    return user
