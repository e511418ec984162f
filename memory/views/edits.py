"""One memory's writes from Settings → Memory: add, edit, delete, restore, pin, end date."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.http import AuthedHttpRequest
from memory import fragments, selectors, services
from memory.forms import MemoryForm
from memory.models import CONTENT_MAX, Memory
from memory.views.common import (
    empty_state_oob,
    full_page,
    history,
    memory_view,
    page_url,
    refused_at,
    rejected,
    search_query,
    summary_oob,
)


@login_required
@require_POST
def memory_add(request: AuthedHttpRequest) -> HttpResponse:
    user = request.user
    form = MemoryForm(request.POST)
    memory = None
    if form.is_valid():
        try:
            memory = services.memory_add(user=user, content=form.cleaned_data["content"])
        except services.MemoryRejected as exc:
            form.add_error("content", str(exc))
    if memory is None:
        if request.htmx:  # the form says what is wrong; the live region drops an earlier "Memory added."
            form_html = fragments.part(request, "memory/_add_form.html", add_form=form)
            return fragments.response(form_html, fragments.status_html(""), status=422)
        return full_page(request, status=422, add_form=form)
    if not request.htmx:
        messages.success(request, _("Memory added."))
        return redirect(page_url(f"memory-{memory.pk}"))
    fresh = selectors.memory_get_for_user(user=user, memory_id=memory.pk)
    return fragments.response(
        fragments.part(request, "memory/_add_form.html", add_form=MemoryForm(), refocus=True),
        fragments.row_added_html(request, fresh),
        summary_oob(request),
        fragments.status_html(_("Memory added.")),
    )


@memory_view("GET", "POST")
def memory_edit(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """GET: the row as a form. POST: save a new version (or Cancel, without JavaScript)."""
    if request.method == "POST" and request.POST.get("cancel"):
        return redirect(page_url(f"memory-{memory.pk}"))
    form = MemoryForm(request.POST if request.method == "POST" else None, initial={"content": memory.content})
    if form.is_bound and form.is_valid():
        try:
            new = services.memory_edit(user=request.user, memory=memory, content=form.cleaned_data["content"])
        except services.MemoryRejected as exc:
            form.add_error("content", str(exc))
        else:
            return _edited(request, new)
    status = 422 if form.is_bound else 200
    if request.htmx:
        context = {"memory": memory, "mode": "edit", "edit_form": form, "limit": CONTENT_MAX}
        return render(request, "memory/_row.html", context, status=status)
    return full_page(request, status=status, edit_id=memory.pk, edit_form=form)


def _edited(request: AuthedHttpRequest, new: Memory) -> HttpResponse:
    if not request.htmx:
        messages.success(request, _("Memory saved."))
        return redirect(page_url(f"memory-{new.pk}"))
    fresh = selectors.memory_get_for_user(user=request.user, memory_id=new.pk)
    return fragments.response(
        fragments.part(request, "memory/_row.html", memory=fresh, refocus=True),
        history(request, oob=True),
        summary_oob(request),
        fragments.status_html(_("Memory saved. Memora uses the new wording from your next message.")),
    )


@memory_view("GET", "POST")
def memory_delete(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """GET: the confirmation step. POST: delete the memory and its earlier versions, permanently."""
    if request.method == "GET":
        if request.htmx:
            selectors.memory_history_restorations(user=request.user, rows=[memory])
            context = {"memory": memory, "mode": "confirm", "limit": CONTENT_MAX}
            return render(request, fragments.row_template(memory), context)
        return full_page(request, delete_id=memory.pk)
    anchor = "memory-list" if memory.is_active else "memory-history"
    if request.POST.get("cancel"):
        return redirect(page_url(f"memory-{memory.pk}"))
    was_active = memory.is_active
    services.memory_delete(user=request.user, memory=memory)
    if not request.htmx:
        messages.success(request, _("Memory deleted permanently."))
        return redirect(page_url(anchor))
    if was_active:  # the row is swapped for nothing; its earlier versions leave the history
        return fragments.response(
            history(request, oob=True),
            empty_state_oob(request),
            summary_oob(request),
            fragments.status_html(_("Memory deleted permanently.")),
        )
    return fragments.response(
        history(request, oob=False), empty_state_oob(request), fragments.status_html(_("Deleted permanently."))
    )


@memory_view("POST")
@refused_at("memory-history")
def memory_restore(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    new = services.memory_restore(user=request.user, memory=memory)
    if not request.htmx:
        messages.success(request, _("Memory restored."))
        return redirect(page_url(f"memory-{new.pk}"))
    active = fragments.list_context(request.user, search_query(request))
    return fragments.response(
        history(request, oob=False),
        fragments.part(request, "memory/_active_list.html", oob=True, refocus_id=new.pk, **active),
        summary_oob(request),
        fragments.status_html(_("Memory restored. Memora uses it again from your next message.")),
    )


@memory_view("POST")
def memory_pin(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """Pin (in every conversation) or unpin a memory: in place, no new version."""
    try:
        services.memory_settings(user=request.user, memory=memory, pinned=request.POST.get("pinned") == "on")
    except services.MemoryRejected as exc:
        return rejected(request, exc, anchor=f"memory-{memory.pk}")
    return _row_changed(request, memory.pk, gettext("Saved."), summary=True)  # pinned: in every chat


@memory_view("POST")
def memory_expiry(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """Set (any future moment, in UTC) or clear a memory's end date: in place, no new version."""
    raw = "" if request.POST.get("clear") else request.POST.get("expires_at", "").strip()
    expires_at = parse_datetime(raw) if raw else None
    try:
        if raw and expires_at is None:
            raise services.MemoryRejected(gettext("Give the end date as a date and time."))
        services.memory_settings(user=request.user, memory=memory, expires_at=expires_at)
    except services.MemoryRejected as exc:
        if request.htmx and not isinstance(exc, services.MemoryConflict):
            return _expiry_refused(request, memory.pk, raw, str(exc))
        return rejected(request, exc, anchor=f"memory-{memory.pk}")
    text = gettext("End date saved.") if expires_at else gettext("End date cleared.")
    return _row_changed(request, memory.pk, text)


def _expiry_refused(request: AuthedHttpRequest, memory_id: int, value: str, error: str) -> HttpResponse:
    """The row again, its end-date form open with what was typed and why it was refused beside the field."""
    fresh = selectors.memory_get_for_user(user=request.user, memory_id=memory_id)
    row = fragments.part(request, "memory/_row.html", memory=fresh, expiry_error=error, expiry_value=value)
    return fragments.response(row, fragments.status_html(""), status=422)


def _row_changed(request: AuthedHttpRequest, memory_id: int, text: str, *, summary: bool = False) -> HttpResponse:
    if not request.htmx:
        messages.success(request, text)
        return redirect(page_url(f"memory-{memory_id}"))
    fresh = selectors.memory_get_for_user(user=request.user, memory_id=memory_id)
    template = "memory/_suggested_row.html" if fresh.suggested else "memory/_row.html"
    return fragments.response(
        fragments.part(request, template, memory=fresh, refocus=True),
        *([summary_oob(request)] if summary else []),
        fragments.status_html(text),
    )
