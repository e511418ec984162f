"""Reads, scoped to the requesting user: another user's token is the same 404 as a missing one."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import ApiToken, User


def api_token_list(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def api_token_get_for_user(*, user: User, token_id: int) -> ApiToken:
    return get_object_or_404(api_token_list(user=user), pk=token_id)
