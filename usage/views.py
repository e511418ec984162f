from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.http import AuthedHttpRequest
from accounts.layout import layout_context
from usage import services
from usage.page import usage_page_context


@login_required
@require_GET
def usage_page(request: AuthedHttpRequest) -> HttpResponse:
    """Settings → Usage: the user's own tokens and their cost."""
    user = request.user
    context = {**layout_context(user), **usage_page_context(user_id=user.pk, today=services.today())}
    return render(request, "usage/page.html", context)
