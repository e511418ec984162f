"""Suggestions waiting to be kept: Keep, Discard, and which learned memories wait (the review setting)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from accounts.http import AuthedHttpRequest
from accounts.models import User
from accounts.services import user_set_memory_review
from memory import chat_fragments, fragments, notices, services
from memory.models import Memory
from memory.views.common import history, memory_view, page_url, refused_at, search_query, summary_oob


def _suggested_oob(request: AuthedHttpRequest, *, oob: bool = True) -> str:
    return fragments.part(request, "memory/_suggested.html", oob=oob, **fragments.suggested_context(request.user))


def _answered(request: AuthedHttpRequest, *, memory_id: int, content: str, kept: bool, text: str) -> HttpResponse:
    """After Keep or Discard: the notice's item says so (in a conversation), or the page's sections are
    re-rendered (Settings → Memory)."""
    if not request.htmx:
        messages.success(request, text)
        return redirect(page_url(f"memory-{memory_id}" if kept else "memory-suggested"))
    if request.GET.get("from") == "notice":
        context = {"memory_id": memory_id, "content": content, "kept": kept, "link": page_url(f"memory-{memory_id}")}
        # The conversation's marker that asked now says it was remembered, in place.
        changed = notices.marker_suggestion_kept(user_id=request.user.pk, memory_id=memory_id) if kept else []
        updated = "".join(chat_fragments.marker_replace_html(marker) for marker in changed)
        return HttpResponse(render(request, "memory/_suggestion_done.html", context).content.decode() + updated)
    user = request.user
    active = fragments.list_context(user, search_query(request))
    return fragments.response(
        _suggested_oob(request, oob=False),
        fragments.part(request, "memory/_active_list.html", oob=True, refocus_id=memory_id if kept else None, **active),
        history(request, oob=True),
        summary_oob(request),
        fragments.status_html(text),
    )


@memory_view("POST")
@refused_at("memory-suggested")
def memory_keep(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """Keep a suggestion: it becomes active (replacing the value it updates)."""
    kept = services.memory_confirm(user=request.user, memory=memory)
    text = gettext("Kept. Memora uses it from your next message.")
    if request.GET.get("from") != "notice":
        notices.marker_suggestion_kept(user_id=request.user.pk, memory_id=kept.pk)
    return _answered(request, memory_id=kept.pk, content=kept.content, kept=True, text=text)


@memory_view("POST")
@refused_at("memory-suggested")
def memory_discard(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """Discard a suggestion: it is deleted, and nothing it would have replaced changes."""
    if not memory.suggested or memory.invalid_at is not None:
        raise services.MemoryConflict(gettext("This memory is not a suggestion waiting to be kept."))
    memory_id, content = memory.pk, memory.content  # the row goes with it
    services.memory_delete(user=request.user, memory=memory)
    text = gettext("Discarded. Nothing was remembered.")
    return _answered(request, memory_id=memory_id, content=content, kept=False, text=text)


@login_required
@require_POST
def memory_review_setting(request: AuthedHttpRequest) -> HttpResponse:
    """Which learned memories wait as suggestions: none, sensitive ones, or all."""
    value = request.POST.get("memory_review", "")
    if value not in User.MemoryReview.values:
        return HttpResponseBadRequest(gettext("Choose auto, sensitive or all."))
    user = user_set_memory_review(user=request.user, review=value)
    text = gettext("Saved.")
    if not request.htmx:
        messages.success(request, text)
        return redirect(page_url("memory-suggested"))
    return fragments.response(
        # Focus stays on Apply (the setting it saved), not on whatever memory comes first.
        fragments.part(request, "memory/_review.html", **fragments.review_context(user), applied=True),
        fragments.status_html(text),
    )
