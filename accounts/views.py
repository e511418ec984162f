from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors
from accounts.forms import ApiTokenForm, SignupForm
from accounts.models import User
from accounts.services import LanguageRejected, TokenRejected, api_token_create, api_token_revoke, user_set_language


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
    """Settings → API tokens: list (with last use), create (shown once), revoke."""
    user: User = request.user  # type: ignore[assignment]
    form = ApiTokenForm(request.POST or None)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                _, created = api_token_create(user=user, name=form.cleaned_data["name"], expires_at=form.expires_at())
            except TokenRejected as exc:
                form.add_error(None, str(exc))
        if created is None:
            status = 422
        else:
            form = ApiTokenForm()
    context = {"form": form, "tokens": selectors.api_token_list(user=user), "created": created}
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_POST
def language_set(request: HttpRequest) -> HttpResponse:
    """The language form (accounts/_language_form.html): save, then back to the page it was on."""
    user: User = request.user  # type: ignore[assignment]
    try:
        user_set_language(user=user, language=request.POST.get("language", ""))
    except LanguageRejected as exc:
        messages.error(request, str(exc))
    else:
        # The confirmation already speaks the language just chosen (or the browser's, for "").
        translation.activate(user.language or translation.get_language_from_request(request))
        messages.success(request, _("Language saved."))
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = reverse("tokens")
    return redirect(back)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = selectors.api_token_get_for_user(user=request.user, token_id=token_id)  # type: ignore[arg-type]
    api_token_revoke(token=token)
    name = token.name or _("unnamed")
    messages.success(request, _("Revoked the token %(prefix)s… (%(name)s).") % {"prefix": token.prefix, "name": name})
    return redirect("tokens")
