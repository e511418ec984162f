"""Settings → Memory "Tidy up": run a pass, and accept, reject or undo its suggestions.

Plain forms that redirect back to the section, so the page after an answer equals a reload (an accepted
merge changes the active list too). The pass runs in the request: it is bounded (at most one judge call
per candidate cluster, the estimate shown beside the button) and the person asked for it and waits.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from accounts.http import AuthedHttpRequest
from memory.consolidation import services
from memory.services import MemoryRejected

SECTION = "#memory-tidy"


def _back() -> HttpResponse:
    return redirect(reverse("memory:page") + SECTION)


@login_required
@require_POST
def tidy_run(request: AuthedHttpRequest) -> HttpResponse:
    done = services.consolidation_pass(user_id=request.user.pk)
    messages.info(
        request,
        ngettext("Tidy-up done: %(count)d suggestion.", "Tidy-up done: %(count)d suggestions.", done.proposals)
        % {"count": done.proposals},
    )
    return _back()


def _decision(decide: Callable[..., object]) -> Callable[[AuthedHttpRequest, int], HttpResponse]:
    @login_required
    @require_POST
    def view(request: AuthedHttpRequest, proposal_id: int) -> HttpResponse:
        proposal = services.proposal_get_for_user(user=request.user, proposal_id=proposal_id)
        try:
            decide(user=request.user, proposal=proposal)
        except MemoryRejected as exc:
            messages.error(request, str(exc))
        return _back()

    return view


tidy_accept = _decision(services.proposal_accept)
tidy_reject = _decision(services.proposal_reject)
tidy_undo = _decision(services.proposal_undo)
