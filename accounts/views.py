from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts import selectors
from accounts.forms import ApiTokenForm, SignupForm
from accounts.layout import layout_context
from accounts.models import User
from accounts.services import TokenRejected, api_token_create, api_token_revoke


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("chat:index")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("chat:index")
    return render(request, "accounts/signup.html", {"form": form})


def locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """django-axes' lockout answer (AXES_LOCKOUT_CALLABLE): a page that says why and for how long, 429."""
    minutes = max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def token_page(request: HttpRequest) -> HttpResponse:
    """Settings → API tokens: list (with last use), create (shown once, with a Copy button), revoke."""
    user: User = request.user  # type: ignore[assignment]
    form = ApiTokenForm(request.POST or None)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                _token, created = api_token_create(
                    user=user, name=form.cleaned_data["name"], expires_at=form.expires_at()
                )
            except TokenRejected as exc:
                form.add_error(None, str(exc))
        if created is None:
            status = 422
        else:
            form = ApiTokenForm()
    return _tokens(request, user, status=status, form=form, created=created)


def _tokens(request: HttpRequest, user: User, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        **layout_context(user),
        "form": ApiTokenForm(),
        "tokens": selectors.api_token_list(user=user),
        "created": None,
        **extra,
    }
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """GET: the token's row asks first. POST: revoke it."""
    user: User = request.user  # type: ignore[assignment]
    token = selectors.api_token_get_for_user(user=user, token_id=token_id)
    if request.method == "GET":
        return _tokens(request, user, confirm_id=token.pk)
    api_token_revoke(token=token)
    name = token.name or _("unnamed")
    messages.success(request, _("Revoked the token %(prefix)s… (%(name)s).") % {"prefix": token.prefix, "name": name})
    return redirect("tokens")
