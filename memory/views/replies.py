"""Under a reply: "Used N memories" (memory/chat/_reply.html), each with Wrong and Outdated."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from accounts.http import AuthedHttpRequest
from memory import services
from memory.models import Memory
from memory.views.common import memory_view, page_url


def _reply_item(request: AuthedHttpRequest, memory: Memory, outcome: str, **extra: bool) -> HttpResponse:
    """The memory's line under the reply, saying what was done (the whole list stays as it was)."""
    message_id = request.POST.get("message", "") or request.GET.get("message", "")
    context = {"memory": memory, "message": {"pk": message_id if message_id.isdigit() else ""}, "outcome": outcome}
    return render(request, "memory/chat/_reply_memory.html", {**context, **extra})


@memory_view("GET", "POST")
def reply_wrong(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """ "Wrong": delete the memory (and its earlier versions) permanently; the next turn goes without it.
    GET asks first, in the line itself (or, with `cancel`, puts the line back with focus on Wrong)."""
    if request.method == "GET":
        if request.GET.get("cancel"):
            return _reply_item(request, memory, "", refocus=True)
        return _reply_item(request, memory, "", confirm=True)
    services.memory_delete(user=request.user, memory=memory)
    if not request.htmx:
        messages.success(request, gettext("Memory deleted permanently."))
        return redirect(request.META.get("HTTP_REFERER") or page_url())
    return _reply_item(request, memory, gettext("Deleted. Memora won’t use it from your next message."))


@memory_view("POST")
def reply_outdated(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """ "Outdated": move the memory to history (restorable on Settings → Memory)."""
    try:
        memory = services.memory_retract(user=request.user, memory=memory)
    except services.MemoryRejected as exc:
        return _reply_item(request, memory, str(exc))
    if not request.htmx:
        messages.success(request, gettext("Memory moved to History."))
        return redirect(request.META.get("HTTP_REFERER") or page_url())
    return _reply_item(request, memory, gettext("Moved to History. Memora won’t use it from your next message."))
