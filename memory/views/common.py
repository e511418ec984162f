"""What the memory views share: the signed-in user, the page's URL and search, the full page, the
parts re-rendered out of band, and a refused write."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget

from accounts.layout import layout_context
from accounts.models import User
from chat.selectors import project_get_for_user
from core.http import HttpRequest
from memory import connected, fragments, selectors, services
from memory.forms import MemoryForm
from memory.models import Memory
from memory.selectors import PageScope

SEARCH_MAX_CHARS = 200

MemoryView = Callable[[HttpRequest, User, Memory], HttpResponse]


def memory_view(*methods: str) -> Callable[[MemoryView], Callable[[HttpRequest, int], HttpResponse]]:
    """A view of one memory of the signed-in user's (`memory_id` in the URL; 404 for anyone else's),
    answering `methods`: it is called with the user and the memory."""

    def decorate(view: MemoryView) -> Callable[[HttpRequest, int], HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @wraps(view)
        def wrapper(request: HttpRequest, memory_id: int) -> HttpResponse:
            user = request_user(request)
            return view(request, user, selectors.memory_get_for_user(user=user, memory_id=memory_id))

        return wrapper

    return decorate


def request_user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def page_url(anchor: str = "") -> str:
    return reverse("memory:page") + (f"#{anchor}" if anchor else "")


def search_query(request: HttpRequest) -> str:
    data = request.POST if request.method == "POST" else request.GET
    query = data.get("q", "")
    if "\x00" in query:  # PostgreSQL cannot compare with it; the same 400 on every database
        raise BadRequest(_("The search text contains a NUL character, which is not allowed."))
    return " ".join(query.split())[:SEARCH_MAX_CHARS]


def search_scope(request: HttpRequest) -> PageScope:
    """The page's scope filter (SPEC §9): "user", one of the user's projects (another's is a 404), or every scope."""
    value = (request.POST if request.method == "POST" else request.GET).get("scope", "")
    if value == "user":
        return "user"
    if value.isdigit():
        return project_get_for_user(user=request_user(request), project_id=int(value)).pk
    return None


def full_page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    """The full page; `extra` opens one step in it (a row's edit form or delete confirmation, ...)."""
    user = request_user(request)
    layout = layout_context(user)  # the sidebar of conversations and projects, drawn by chat (accounts.layout)
    context = {
        **layout,
        "add_form": MemoryForm(),
        **fragments.list_context(user, search_query(request), search_scope(request)),
        **fragments.summary_context(user),
        **fragments.history_context(user, search_query(request), search_scope(request)),
        "memory_projects": layout.get("sidebar_projects", []),
        **fragments.suggested_context(user),
        "accesses": connected.accesses(user=user),
        "review_ids": review_ids(request),
        **extra,
    }
    return render(request, "memory/page.html", context, status=status)


def review_ids(request: HttpRequest) -> set[int]:
    """The memories a notice's Review link names (`?review=12,13`): all highlighted on the page."""
    return {int(part) for part in request.GET.get("review", "").split(",") if part.strip().isdigit()}


def summary_oob(request: HttpRequest) -> str:
    return fragments.summary_oob_html(request, request_user(request))


def history(request: HttpRequest, *, oob: bool) -> str:
    return fragments.history_html(request, request_user(request), search_query(request), oob=oob)


def empty_state_oob(request: HttpRequest) -> str:
    return fragments.empty_state_oob_html(request, request_user(request), search_query(request))


def rejected(request: HttpRequest, exc: services.MemoryRejected, *, anchor: str) -> HttpResponse:
    """A write that could not be done (nothing changed): say why in the live region."""
    if not request.htmx:
        messages.error(request, str(exc))
        return redirect(page_url(anchor))
    html = fragments.error_status_html(str(exc))
    return reswap(retarget(HttpResponse(html, status=exc.status), "#memory-status"), "innerHTML")
