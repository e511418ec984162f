"""Settings → Memory as a whole: the page (and its search), one row, memory on or off, forget
everything, export."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from accounts.http import AuthedHttpRequest
from accounts.services import user_set_memory_enabled
from memory import fragments, selectors, services
from memory.forms import ForgetAllForm, MemorySwitchForm
from memory.models import CONTENT_MAX, Memory
from memory.schemas import MemoryExportOut
from memory.views.common import (
    full_page,
    memory_view,
    page_url,
    search_query,
    search_scope,
    summary_oob,
)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_page(request: AuthedHttpRequest) -> HttpResponse:
    """The page; an HTMX request (the search box) gets the filtered lists and says how many matched."""
    if request.htmx and not request.htmx.history_restore_request:
        user, query, scope = request.user, search_query(request), search_scope(request)
        active, history = fragments.list_context(user, query, scope), fragments.history_context(user, query, scope)
        return fragments.response(
            fragments.part(request, "memory/_active_list.html", **active),
            fragments.part(request, "memory/_history.html", oob=True, **history),
            fragments.status_html(fragments.search_count(query, len(active["memories"]), len(history["history"]))),
        )
    return full_page(request)


@memory_view("GET")
def memory_row(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """One row as displayed (what Cancel swaps back in)."""
    if not request.htmx:
        return redirect(page_url(f"memory-{memory.pk}"))
    selectors.memory_history_restorations(user=request.user, rows=[memory])
    return render(request, fragments.row_template(memory), {"memory": memory, "limit": CONTENT_MAX})


@login_required
@require_http_methods(["GET", "POST"])
def memory_forget(request: AuthedHttpRequest) -> HttpResponse:
    """GET: the confirmation (naming how many memories go). POST: forget everything."""
    user = request.user
    if request.method == "GET":
        confirming = not request.GET.get("cancel")
        if not request.htmx:
            return full_page(request, forget_confirm=confirming) if confirming else redirect(page_url())
        context = {
            "forget_confirm": confirming,
            "refocus": not confirming,  # back on the button after Cancel
            **fragments.summary_context(user),
            **fragments.history_context(user),
        }
        return render(request, "memory/_forget.html", context)
    if request.POST.get("cancel"):
        return redirect(page_url())
    form = ForgetAllForm(request.POST)
    purge = form.is_valid() and form.cleaned_data["purge"]
    count = services.memory_forget_all(user=user, purge=purge)
    if purge:
        text = ngettext("Deleted %(count)d memory permanently.", "Deleted %(count)d memories permanently.", count)
    else:
        text = ngettext("Forgot %(count)d memory.", "Forgot %(count)d memories.", count)
    messages.success(request, text % {"count": count})
    if request.htmx:
        return HttpResponseClientRedirect(page_url())
    return redirect(page_url())


@login_required
@require_POST
def memory_switch(request: AuthedHttpRequest) -> HttpResponse:
    """Memory on or off: off means nothing is learned and nothing is used."""
    form = MemorySwitchForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(_("Say enabled=on or enabled=off."))
    user = user_set_memory_enabled(user=request.user, enabled=form.is_on)
    text = _("Memory is on.") if user.memory_enabled else _("Memory is off: nothing is learned and nothing is used.")
    if not request.htmx:
        messages.success(request, text)
        return redirect(page_url())
    return fragments.response(
        fragments.part(request, "memory/_switch.html", memory_enabled=user.memory_enabled),
        summary_oob(request),
        fragments.status_html(text),
    )


@login_required
@require_GET
def memory_export(request: AuthedHttpRequest) -> HttpResponse:
    """Everything remembered, with history and sources, as a JSON download (the API's export)."""
    data = MemoryExportOut.model_validate(selectors.memory_export(user=request.user)).model_dump()
    body = json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    filename = f"memora-memories-{timezone.now():%Y-%m-%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
