"""Reads of the imports app, scoped to the user."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import User
from imports.models import ChatImport


def import_list(*, user: User) -> QuerySet[ChatImport]:
    return ChatImport.objects.filter(owner=user).order_by("-created_at", "-id")


def import_get_for_user(*, user: User, import_id: int) -> ChatImport:
    """The user's import; another user's id and a missing one are the same 404."""
    return get_object_or_404(import_list(user=user), pk=import_id)


def import_active(*, user: User) -> bool:
    """Whether an import or a learning pass of the user's is under way (the page keeps polling)."""
    rows = import_list(user=user)
    running = [ChatImport.Status.QUEUED, ChatImport.Status.RUNNING]
    learning = [ChatImport.LearnStatus.QUEUED, ChatImport.LearnStatus.RUNNING]
    return rows.filter(status__in=running).exists() or rows.filter(learn_status__in=learning).exists()
