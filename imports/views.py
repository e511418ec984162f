"""Settings → Import: upload an export (a preview first), start it, follow its progress, learn from it,
remove it; paste what an old assistant remembers.

Every form is a plain POST that redirects back to the page (it works without JavaScript); the list of
imports polls itself with htmx while an import or a learning pass runs (`import_list`), so a reload shows
the same progress. A refused upload or paste is shown on the page with the API's sentence (status 4xx).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthedHttpRequest
from accounts.layout import layout_context
from accounts.models import User
from imports import learning, paste, selectors, services
from imports.models import ChatImport

ImportView = Callable[[AuthedHttpRequest, ChatImport], HttpResponse]


def _items(user: User) -> list[dict[str, Any]]:
    rows = list(selectors.import_list(user=user))
    return [
        {
            "row": row,
            "estimate": learning.learn_estimate(chat_import=row)
            if row.status == ChatImport.Status.DONE and row.kind == ChatImport.Kind.EXPORT
            else None,
        }
        for row in rows
    ]


def _list_context(user: User) -> dict[str, Any]:
    return {"items": _items(user), "active": selectors.import_active(user=user)}


def _page(request: AuthedHttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    user = request.user
    context = {**layout_context(user), **_list_context(user), "sources": ChatImport.Source.choices, **extra}
    return render(request, "imports/page.html", context, status=status)


def _back(row: ChatImport | None = None) -> HttpResponse:
    return redirect(reverse("imports:page") + (f"#import-{row.pk}" if row is not None else ""))


@login_required
@require_GET
def import_page(request: AuthedHttpRequest) -> HttpResponse:
    return _page(request)


@login_required
@require_GET
def import_list(request: AuthedHttpRequest) -> HttpResponse:
    """The list alone (what the page polls while work runs)."""
    return render(request, "imports/_list.html", _list_context(request.user))


@login_required
@require_POST
def import_upload(request: AuthedHttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    if upload is None:
        return _page(request, status=400, upload_error=_("Choose the export file to upload."))
    try:
        row = services.import_create(
            user=request.user, upload=upload, source=request.POST.get("source") or None, dry_run=True
        )
    except services.ImportRejected as exc:
        return _page(request, status=exc.status, upload_error=str(exc))
    return _back(row)


@login_required
@require_POST
def import_paste(request: AuthedHttpRequest) -> HttpResponse:
    try:
        row = paste.paste_create(
            user=request.user, text=request.POST.get("text", ""), source=request.POST.get("source")
        )
    except services.ImportRejected as exc:
        return _page(request, status=exc.status, paste_error=str(exc), paste_text=request.POST.get("text", ""))
    messages.success(
        request,
        _("%(count)s suggestions are waiting for you under Settings → Memory.") % {"count": row.learn_suggested},
    )
    return _back(row)


def _import_view(view: ImportView) -> Callable[[AuthedHttpRequest, int], HttpResponse]:
    """A POST on one import of the signed-in user's (404 for anyone else's); a refusal is shown on the page."""

    @login_required
    @require_POST
    @wraps(view)
    def wrapper(request: AuthedHttpRequest, import_id: int) -> HttpResponse:
        row = selectors.import_get_for_user(user=request.user, import_id=import_id)
        try:
            return view(request, row)
        except services.ImportRejected as exc:
            messages.error(request, str(exc))
            return _back(row)

    return wrapper


@_import_view
def import_start(request: AuthedHttpRequest, row: ChatImport) -> HttpResponse:
    return _back(services.import_start(user=request.user, chat_import=row))


@_import_view
def import_learn(request: AuthedHttpRequest, row: ChatImport) -> HttpResponse:
    return _back(services.learn_start(user=request.user, chat_import=row))


@_import_view
def import_learn_stop(request: AuthedHttpRequest, row: ChatImport) -> HttpResponse:
    return _back(services.learn_stop(user=request.user, chat_import=row))


@_import_view
def import_remove(request: AuthedHttpRequest, row: ChatImport) -> HttpResponse:
    removed = services.import_remove(user=request.user, chat_import=row)
    messages.success(
        request,
        _("Import removed: %(conversations)s conversations and %(memories)s memories deleted.") % removed,
    )
    return _back()
