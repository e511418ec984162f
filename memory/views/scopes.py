"""Moving a memory between scopes from Settings → Memory (SPEC §9): about you, or one of your projects. The
move is a new version; the old one stays in History, restorable (memory.moves)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from accounts.http import AuthedHttpRequest
from chat.selectors import project_get_for_user
from memory import moves, services
from memory.models import Memory
from memory.views.common import memory_view, page_url


@memory_view("POST")
def memory_move(request: AuthedHttpRequest, memory: Memory) -> HttpResponse:
    """Move the memory to the scope chosen ("user", or a project's id; another user's project is a 404)."""
    value = request.POST.get("scope", "")
    project = (
        None
        if value in ("", "user")
        else project_get_for_user(user=request.user, project_id=int(value) if value.isdigit() else 0)
    )
    try:
        moved = moves.memory_move(user=request.user, memory=memory, project=project)
    except services.MemoryRejected as exc:
        messages.error(request, str(exc))
        return redirect(page_url(f"memory-{memory.pk}"))
    if moved.pk != memory.pk:
        where = project.name if project is not None else _("about you")
        messages.success(request, _("Moved to %(scope)s. The earlier placement is in History.") % {"scope": where})
    return redirect(page_url(f"memory-{moved.pk}"))
