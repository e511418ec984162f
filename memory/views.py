"""Settings → Memory: see, search, add, edit, delete, restore and export what is remembered.

Thin views: parse, fetch through the user-scoped selector (another user's id is a 404), call one
service, render. Every UI element has one partial under memory/ (a row, the history, the summary,
...), used by the full page and by the HTMX responses alike (rendered and joined in
memory/fragments.py), so the live page always equals a reload. Without JavaScript every action is a
plain form: GET shows a step (edit form, confirmation) in the full page, POST redirects back to it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from accounts.models import User
from accounts.services import user_set_memory_enabled, user_set_memory_review
from chat.views import sidebar_context
from memory import fragments, notices, selectors, services
from memory.forms import ForgetAllForm, MemoryForm, MemorySwitchForm
from memory.models import CONTENT_MAX, Memory
from memory.schemas import MemoryExportOut

SEARCH_MAX_CHARS = 200


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def _htmx(request: HttpRequest) -> bool:
    return bool(request.htmx)  # type: ignore[attr-defined]


def _page_url(anchor: str = "") -> str:
    return reverse("memory:page") + (f"#{anchor}" if anchor else "")


def _query(request: HttpRequest) -> str:
    data = request.POST if request.method == "POST" else request.GET
    query = data.get("q", "")
    if "\x00" in query:  # PostgreSQL cannot compare with it; the same 400 on every database
        raise BadRequest(_("The search text contains a NUL character, which is not allowed."))
    return " ".join(query.split())[:SEARCH_MAX_CHARS]


def _page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    """The full page; `extra` opens one step in it (a row's edit form or delete confirmation, ...)."""
    user = _user(request)
    context = {
        **sidebar_context(user),
        "current": None,
        "add_form": MemoryForm(),
        **fragments.list_context(user, _query(request)),
        **fragments.summary_context(user),
        **fragments.history_context(user, _query(request)),
        **fragments.suggested_context(user),
        "review_ids": _review_ids(request),
        **extra,
    }
    return render(request, "memory/page.html", context, status=status)


def _review_ids(request: HttpRequest) -> set[int]:
    """The memories a notice's Review link names (`?review=12,13`): all highlighted on the page."""
    return {int(part) for part in request.GET.get("review", "").split(",") if part.strip().isdigit()}


def _summary_oob(request: HttpRequest) -> str:
    return fragments.summary_oob_html(request, _user(request))


def _history(request: HttpRequest, *, oob: bool) -> str:
    return fragments.history_html(request, _user(request), _query(request), oob=oob)


def _empty_state_oob(request: HttpRequest) -> str:
    return fragments.empty_state_oob_html(request, _user(request), _query(request))


def _rejected(request: HttpRequest, exc: services.MemoryRejected, *, anchor: str) -> HttpResponse:
    """A write that could not be done (nothing changed): say why in the live region."""
    if not _htmx(request):
        messages.error(request, str(exc))
        return redirect(_page_url(anchor))
    html = fragments.error_status_html(str(exc))
    return reswap(retarget(HttpResponse(html, status=exc.status), "#memory-status"), "innerHTML")


# --- the page -------------------------------------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_page(request: HttpRequest) -> HttpResponse:
    """The page; an HTMX request (the search box) gets the filtered lists and says how many matched."""
    if _htmx(request) and not request.htmx.history_restore_request:  # type: ignore[attr-defined]
        user, query = _user(request), _query(request)
        active, history = fragments.list_context(user, query), fragments.history_context(user, query)
        return fragments.response(
            fragments.part(request, "memory/_active_list.html", **active),
            fragments.part(request, "memory/_history.html", oob=True, **history),
            fragments.status_html(fragments.search_count(query, len(active["memories"]), len(history["history"]))),
        )
    return _page(request)


@login_required
@require_GET
def memory_row(request: HttpRequest, memory_id: int) -> HttpResponse:
    """One row as displayed (what Cancel swaps back in)."""
    memory = selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)
    if not _htmx(request):
        return redirect(_page_url(f"memory-{memory.pk}"))
    selectors.memory_history_restorations(user=_user(request), rows=[memory])
    return render(request, fragments.row_template(memory), {"memory": memory, "limit": CONTENT_MAX})


@login_required
@require_POST
def memory_add(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    form = MemoryForm(request.POST)
    memory = None
    if form.is_valid():
        try:
            memory = services.memory_add(user=user, content=form.cleaned_data["content"])
        except services.MemoryRejected as exc:
            form.add_error("content", str(exc))
    if memory is None:
        if _htmx(request):  # the form says what is wrong; the live region drops an earlier "Memory added."
            form_html = fragments.part(request, "memory/_add_form.html", add_form=form)
            return fragments.response(form_html, fragments.status_html(""), status=422)
        return _page(request, status=422, add_form=form)
    if not _htmx(request):
        messages.success(request, _("Memory added."))
        return redirect(_page_url(f"memory-{memory.pk}"))
    fresh = selectors.memory_get_for_user(user=user, memory_id=memory.pk)
    return fragments.response(
        fragments.part(request, "memory/_add_form.html", add_form=MemoryForm(), refocus=True),
        fragments.row_added_html(request, fresh),
        _summary_oob(request),
        fragments.status_html(_("Memory added.")),
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: HttpRequest, memory_id: int) -> HttpResponse:
    """GET: the row as a form. POST: save a new version (or Cancel, without JavaScript)."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    if request.method == "POST" and request.POST.get("cancel"):
        return redirect(_page_url(f"memory-{memory.pk}"))
    form = MemoryForm(request.POST if request.method == "POST" else None, initial={"content": memory.content})
    if form.is_bound and form.is_valid():
        try:
            new = services.memory_edit(user=user, memory=memory, content=form.cleaned_data["content"])
        except services.MemoryRejected as exc:
            form.add_error("content", str(exc))
        else:
            return _edited(request, new)
    status = 422 if form.is_bound else 200
    if _htmx(request):
        context = {"memory": memory, "mode": "edit", "edit_form": form, "limit": CONTENT_MAX}
        return render(request, "memory/_row.html", context, status=status)
    return _page(request, status=status, edit_id=memory.pk, edit_form=form)


def _edited(request: HttpRequest, new: Memory) -> HttpResponse:
    if not _htmx(request):
        messages.success(request, _("Memory saved."))
        return redirect(_page_url(f"memory-{new.pk}"))
    fresh = selectors.memory_get_for_user(user=_user(request), memory_id=new.pk)
    return fragments.response(
        fragments.part(request, "memory/_row.html", memory=fresh, refocus=True),
        _history(request, oob=True),
        _summary_oob(request),
        fragments.status_html(_("Memory saved. Memora uses the new wording from your next message.")),
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete(request: HttpRequest, memory_id: int) -> HttpResponse:
    """GET: the confirmation step. POST: delete the memory and its earlier versions, permanently."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    if request.method == "GET":
        if _htmx(request):
            selectors.memory_history_restorations(user=user, rows=[memory])
            context = {"memory": memory, "mode": "confirm", "limit": CONTENT_MAX}
            return render(request, fragments.row_template(memory), context)
        return _page(request, delete_id=memory.pk)
    anchor = "memory-list" if memory.is_active else "memory-history"
    if request.POST.get("cancel"):
        return redirect(_page_url(f"memory-{memory.pk}"))
    was_active = memory.is_active
    services.memory_delete(user=user, memory=memory)
    if not _htmx(request):
        messages.success(request, _("Memory deleted permanently."))
        return redirect(_page_url(anchor))
    if was_active:  # the row is swapped for nothing; its earlier versions leave the history
        return fragments.response(
            _history(request, oob=True),
            _empty_state_oob(request),
            _summary_oob(request),
            fragments.status_html(_("Memory deleted permanently.")),
        )
    return fragments.response(
        _history(request, oob=False), _empty_state_oob(request), fragments.status_html(_("Deleted permanently."))
    )


@login_required
@require_POST
def memory_restore(request: HttpRequest, memory_id: int) -> HttpResponse:
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    try:
        new = services.memory_restore(user=user, memory=memory)
    except services.MemoryRejected as exc:
        return _rejected(request, exc, anchor="memory-history")
    if not _htmx(request):
        messages.success(request, _("Memory restored."))
        return redirect(_page_url(f"memory-{new.pk}"))
    active = fragments.list_context(user, _query(request))
    return fragments.response(
        _history(request, oob=False),
        fragments.part(request, "memory/_active_list.html", oob=True, refocus_id=new.pk, **active),
        _summary_oob(request),
        fragments.status_html(_("Memory restored. Memora uses it again from your next message.")),
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_forget(request: HttpRequest) -> HttpResponse:
    """GET: the confirmation (naming how many memories go). POST: forget everything."""
    user = _user(request)
    if request.method == "GET":
        confirming = not request.GET.get("cancel")
        if not _htmx(request):
            return _page(request, forget_confirm=confirming) if confirming else redirect(_page_url())
        context = {
            "forget_confirm": confirming,
            "refocus": not confirming,  # back on the button after Cancel
            **fragments.summary_context(user),
            **fragments.history_context(user),
        }
        return render(request, "memory/_forget.html", context)
    if request.POST.get("cancel"):
        return redirect(_page_url())
    form = ForgetAllForm(request.POST)
    purge = form.is_valid() and form.cleaned_data["purge"]
    count = services.memory_forget_all(user=user, purge=purge)
    if purge:
        text = ngettext("Deleted %(count)d memory permanently.", "Deleted %(count)d memories permanently.", count)
    else:
        text = ngettext("Forgot %(count)d memory.", "Forgot %(count)d memories.", count)
    messages.success(request, text % {"count": count})
    if _htmx(request):
        return HttpResponseClientRedirect(_page_url())
    return redirect(_page_url())


@login_required
@require_POST
def memory_switch(request: HttpRequest) -> HttpResponse:
    """Memory on or off: off means nothing is learned and nothing is used."""
    form = MemorySwitchForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(_("Say enabled=on or enabled=off."))
    user = user_set_memory_enabled(user=_user(request), enabled=form.is_on)
    text = _("Memory is on.") if user.memory_enabled else _("Memory is off: nothing is learned and nothing is used.")
    if not _htmx(request):
        messages.success(request, text)
        return redirect(_page_url())
    return fragments.response(
        fragments.part(request, "memory/_switch.html", memory_enabled=user.memory_enabled),
        _summary_oob(request),
        fragments.status_html(text),
    )


@login_required
@require_GET
def memory_export(request: HttpRequest) -> HttpResponse:
    """Everything remembered, with history and sources, as a JSON download (the API's export)."""
    data = MemoryExportOut.model_validate(selectors.memory_export(user=_user(request))).model_dump()
    body = json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    filename = f"memora-memories-{timezone.now():%Y-%m-%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
def memory_notices(request: HttpRequest) -> HttpResponse:
    """The chat page's poll for "Memory updated" notices (see memory.notices), from run `after` on."""
    if not request.user.is_authenticated:
        # The poller stops (htmx stops polling on 286) rather than swap a login page into the chat.
        return HttpResponse(status=286) if _htmx(request) else redirect_to_login(request.get_full_path())
    user = _user(request)
    try:
        after = int(request.GET.get("after", ""))
    except ValueError:  # no position yet: start from now rather than replay old runs
        after = selectors.extraction_run_last_changed_id(user=user)
    items, last = notices.notices_after(user=user, after_run_id=after)
    context: dict[str, Any] = {
        "enabled": True,
        "after": last,
        "notices": items,
        "offline_only": notices.push_is_cross_process(),
    }
    conversation_id = request.GET.get("conversation", "")
    if conversation_id and _is_uuid(conversation_id):
        try:
            marker = int(request.GET.get("marker", ""))
        except ValueError:
            marker = notices.last_marker_id(conversation_id=conversation_id)
        html, marker = notices.markers_after(user=user, conversation_id=conversation_id, after_marker_id=marker)
        context.update(conversation_id=conversation_id, marker=marker, markers=html)
    return render(request, "memory/_notice_poller.html", context)


# --- under a reply: "Used N memories" (memory/chat/_reply.html) -------------------------------------


def _reply_item(request: HttpRequest, memory: Memory, outcome: str) -> HttpResponse:
    """The memory's line under the reply, saying what was done (the whole list stays as it was)."""
    message_id = request.POST.get("message", "")
    context = {"memory": memory, "message": {"pk": message_id if message_id.isdigit() else ""}, "outcome": outcome}
    return render(request, "memory/chat/_reply_memory.html", context)


@login_required
@require_POST
def reply_wrong(request: HttpRequest, memory_id: int) -> HttpResponse:
    """ "Wrong": delete the memory (and its earlier versions) permanently; the next turn goes without it."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    services.memory_delete(user=user, memory=memory)
    if not _htmx(request):
        messages.success(request, gettext("Memory deleted permanently."))
        return redirect(request.META.get("HTTP_REFERER") or _page_url())
    return _reply_item(request, memory, gettext("Deleted. Memora won’t use it from your next message."))


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# --- suggestions, review setting, pin and end date ----------------------------------------------------


def _suggested_oob(request: HttpRequest, *, oob: bool = True) -> str:
    return fragments.part(request, "memory/_suggested.html", oob=oob, **fragments.suggested_context(_user(request)))


def _answered(request: HttpRequest, *, memory_id: int, content: str, kept: bool, text: str) -> HttpResponse:
    """After Keep or Discard: the notice's item says so (in a conversation), or the page's sections are
    re-rendered (Settings → Memory)."""
    if not _htmx(request):
        messages.success(request, text)
        return redirect(_page_url(f"memory-{memory_id}" if kept else "memory-suggested"))
    if request.GET.get("from") == "notice":
        context = {"memory_id": memory_id, "content": content, "kept": kept, "link": _page_url(f"memory-{memory_id}")}
        return render(request, "memory/_suggestion_done.html", context)
    user = _user(request)
    active = fragments.list_context(user, _query(request))
    return fragments.response(
        _suggested_oob(request, oob=False),
        fragments.part(request, "memory/_active_list.html", oob=True, refocus_id=memory_id if kept else None, **active),
        _history(request, oob=True),
        _summary_oob(request),
        fragments.status_html(text),
    )


@login_required
@require_POST
def reply_outdated(request: HttpRequest, memory_id: int) -> HttpResponse:
    """ "Outdated": move the memory to history (restorable on Settings → Memory)."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    try:
        memory = services.memory_retract(user=user, memory=memory)
    except services.MemoryRejected as exc:
        return _reply_item(request, memory, str(exc))
    if not _htmx(request):
        messages.success(request, gettext("Memory moved to History."))
        return redirect(request.META.get("HTTP_REFERER") or _page_url())
    return _reply_item(request, memory, gettext("Moved to History. Memora won’t use it from your next message."))


@login_required
@require_POST
def memory_keep(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Keep a suggestion: it becomes active (replacing the value it updates)."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    try:
        kept = services.memory_confirm(user=user, memory=memory)
    except services.MemoryRejected as exc:
        return _rejected(request, exc, anchor="memory-suggested")
    text = gettext("Kept. Memora uses it from your next message.")
    return _answered(request, memory_id=kept.pk, content=kept.content, kept=True, text=text)


@login_required
@require_POST
def memory_discard(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Discard a suggestion: it is deleted, and nothing it would have replaced changes."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    if not memory.suggested or memory.invalid_at is not None:
        exc = services.MemoryConflict(gettext("This memory is not a suggestion waiting to be kept."))
        return _rejected(request, exc, anchor="memory-suggested")
    content = memory.content
    services.memory_delete(user=user, memory=memory)
    text = gettext("Discarded. Nothing was remembered.")
    return _answered(request, memory_id=memory_id, content=content, kept=False, text=text)


@login_required
@require_POST
def memory_review_setting(request: HttpRequest) -> HttpResponse:
    """Which learned memories wait as suggestions: none, sensitive ones, or all."""
    value = request.POST.get("memory_review", "")
    if value not in User.MemoryReview.values:
        return HttpResponseBadRequest(gettext("Choose auto, sensitive or all."))
    user = user_set_memory_review(user=_user(request), review=value)
    text = gettext("Saved.")
    if not _htmx(request):
        messages.success(request, text)
        return redirect(_page_url("memory-suggested"))
    return fragments.response(
        fragments.part(request, "memory/_review.html", **fragments.review_context(user)), fragments.status_html(text)
    )


@login_required
@require_POST
def memory_pin(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Pin (in every conversation) or unpin a memory: in place, no new version."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    try:
        services.memory_settings(user=user, memory=memory, pinned=request.POST.get("pinned") == "on")
    except services.MemoryRejected as exc:
        return _rejected(request, exc, anchor=f"memory-{memory_id}")
    return _row_changed(request, memory_id, gettext("Saved."))


@login_required
@require_POST
def memory_expiry(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Set (any future moment, in UTC) or clear a memory's end date: in place, no new version."""
    user = _user(request)
    memory = selectors.memory_get_for_user(user=user, memory_id=memory_id)
    raw = "" if request.POST.get("clear") else request.POST.get("expires_at", "").strip()
    expires_at = parse_datetime(raw) if raw else None
    if raw and expires_at is None:
        exc = services.MemoryRejected(gettext("Give the end date as a date and time."))
        return _rejected(request, exc, anchor=f"memory-{memory_id}")
    try:
        services.memory_settings(user=user, memory=memory, expires_at=expires_at)
    except services.MemoryRejected as exc:
        return _rejected(request, exc, anchor=f"memory-{memory_id}")
    text = gettext("End date saved.") if expires_at else gettext("End date cleared.")
    return _row_changed(request, memory_id, text)


def _row_changed(request: HttpRequest, memory_id: int, text: str) -> HttpResponse:
    if not _htmx(request):
        messages.success(request, text)
        return redirect(_page_url(f"memory-{memory_id}"))
    fresh = selectors.memory_get_for_user(user=_user(request), memory_id=memory_id)
    template = "memory/_suggested_row.html" if fresh.suggested else "memory/_row.html"
    return fragments.response(
        fragments.part(request, template, memory=fresh, refocus=True), fragments.status_html(text)
    )
