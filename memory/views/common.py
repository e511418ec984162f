"""What the memory views share: one memory of the signed-in user's, a refused write, the page's URL and
search, the full page, and the parts re-rendered out of band."""

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

from accounts.http import AuthedHttpRequest
from accounts.layout import layout_context
from chat.selectors import project_get_for_user
from memory import connected, fragments, selectors, services
from memory.forms import MemoryForm
from memory.models import Memory
from memory.selectors import PageScope

SEARCH_MAX_CHARS = 200

MemoryView = Callable[[AuthedHttpRequest, Memory], HttpResponse]


def memory_view(*methods: str) -> Callable[[MemoryView], Callable[[AuthedHttpRequest, int], HttpResponse]]:
    """A view of one memory of the signed-in user's (`memory_id` in the URL; 404 for anyone else's),
    answering `methods`: it is called with the memory."""

    def decorate(view: MemoryView) -> Callable[[AuthedHttpRequest, int], HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @wraps(view)
        def wrapper(request: AuthedHttpRequest, memory_id: int) -> HttpResponse:
            return view(request, selectors.memory_get_for_user(user=request.user, memory_id=memory_id))

        return wrapper

    return decorate


def refused_at(anchor: str) -> Callable[[MemoryView], MemoryView]:
    """A write the services refuse (nothing changed) is answered by `rejected`, at `anchor` of the page."""

    def decorate(view: MemoryView) -> MemoryView:
        @wraps(view)
        def wrapper(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
            try:
                return view(request, memory)
            except services.MemoryRejected as exc:
                return rejected(request, exc, anchor=anchor)

        return wrapper

    return decorate


def page_url(anchor: str = "") -> str:
    return reverse("memory:page") + (f"#{anchor}" if anchor else "")


def search_query(request: AuthedHttpRequest) -> str:
    data = request.POST if request.method == "POST" else request.GET
    query = data.get("q", "")
    if "\x00" in query:  # PostgreSQL cannot compare with it; the same 400 on every database
        raise BadRequest(_("The search text contains a NUL character, which is not allowed."))
    return " ".join(query.split())[:SEARCH_MAX_CHARS]


def search_scope(request: AuthedHttpRequest) -> PageScope:
    """The page's scope filter (SPEC §9): "user", one of the user's projects (another's is a 404), or every scope."""
    value = (request.POST if request.method == "POST" else request.GET).get("scope", "")
    if value == "user":
        return "user"
    if value.isdigit():
        return project_get_for_user(user=request.user, project_id=int(value)).pk
    return None


def full_page(request: AuthedHttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    """The full page; `extra` opens one step in it (a row's edit form or delete confirmation, ...)."""
    user = request.user
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


def review_ids(request: AuthedHttpRequest) -> set[int]:
    """The memories a notice's Review link names (`?review=12,13`): all highlighted on the page."""
    return {int(part) for part in request.GET.get("review", "").split(",") if part.strip().isdigit()}


def summary_oob(request: AuthedHttpRequest) -> str:
    return fragments.summary_oob_html(request, request.user)


def history(request: AuthedHttpRequest, *, oob: bool) -> str:
    return fragments.history_html(request, request.user, search_query(request), oob=oob)


def empty_state_oob(request: AuthedHttpRequest) -> str:
    return fragments.empty_state_oob_html(request, request.user, search_query(request))


def rejected(request: AuthedHttpRequest, exc: services.MemoryRejected, *, anchor: str) -> HttpResponse:
    """A write that could not be done (nothing changed): say why in the live region."""
    if not request.htmx:
        messages.error(request, str(exc))
        return redirect(page_url(anchor))
    html = fragments.error_status_html(str(exc))
    return reswap(retarget(HttpResponse(html, status=exc.status), "#memory-status"), "innerHTML")
