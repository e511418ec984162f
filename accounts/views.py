from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts import data, export, selectors, throttle
from accounts.forms import AccountDeleteForm, ApiTokenForm, PasswordChangeForm, SignupForm
from accounts.http import AuthedHttpRequest
from accounts.layout import layout_context
from accounts.models import User
from accounts.scopes import annotate_tokens, project_choices
from accounts.services import (
    AccountDeleteRefused,
    LanguageRejected,
    TokenRejected,
    account_delete,
    api_token_create,
    api_token_revoke,
    user_set_language,
)
from accounts.throttle import client_address
from core.http import HttpRequest


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account, unless the operator closed sign-up (ACCOUNTS_SIGNUP=closed: 403) or this
    address created ACCOUNTS_SIGNUPS_PER_HOUR accounts this hour (429 with Retry-After)."""
    if request.user.is_authenticated:
        return redirect("chat:index")
    if settings.ACCOUNTS_SIGNUP != "open":
        return render(request, "accounts/signup.html", {"closed": True}, status=403)
    form = SignupForm(request.POST or None)
    if request.method == "POST":
        address = client_address(request)
        retry_after = throttle.signups.retry_after(address)
        if retry_after is not None:
            response = render(request, "accounts/signup.html", {"form": form, "throttled": True}, status=429)
            response["Retry-After"] = str(retry_after)
            return response
        if form.is_valid():
            user = form.save()
            throttle.signups.record(address)
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
def token_page(request: AuthedHttpRequest) -> HttpResponse:
    """Settings → API tokens: list (with last use), create (shown once, with a Copy button), revoke."""
    user = request.user
    form = ApiTokenForm(request.POST or None, user_id=user.pk)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                _token, created = api_token_create(
                    user=user,
                    name=form.cleaned_data["name"],
                    expires_at=form.expires_at(),
                    scopes=form.cleaned_data["scopes"],
                    project_id=form.project_id(),
                )
            except TokenRejected as exc:
                form.add_error(None, str(exc))
        if created is None:
            status = 422
        else:
            form = ApiTokenForm(user_id=user.pk)
    return _tokens(request, user, status=status, form=form, created=created)


def _tokens(request: HttpRequest, user: User, *, status: int = 200, **extra: Any) -> HttpResponse:
    tokens = annotate_tokens(list(selectors.api_token_list(user=user)))
    projects = dict(project_choices(user.pk))
    for token in tokens:
        token.project_name = projects.get(token.project_id) if token.project_id else None  # type: ignore[attr-defined]
    context = {
        **layout_context(user),
        "form": ApiTokenForm(user_id=user.pk),
        "tokens": tokens,
        "created": None,
        **extra,
    }
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_POST
def language_set(request: AuthedHttpRequest) -> HttpResponse:
    """The language form (accounts/_language_form.html): save, then back to the page it was on."""
    user = request.user
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
        back = reverse("account")
    return redirect(back)


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: AuthedHttpRequest, token_id: int) -> HttpResponse:
    """GET: the token's row asks first. POST: revoke it."""
    user = request.user
    token = selectors.api_token_get_for_user(user=user, token_id=token_id)
    if request.method == "GET":
        return _tokens(request, user, confirm_id=token.pk)
    api_token_revoke(token=token)
    name = token.name or _("unnamed")
    messages.success(request, _("Revoked the token %(prefix)s… (%(name)s).") % {"prefix": token.prefix, "name": name})
    return redirect("tokens")


# --- Settings → Account: download all my data, delete my account (SPEC §8) ---


@login_required
@require_http_methods(["GET"])
def account_export(request: AuthedHttpRequest) -> StreamingHttpResponse:
    return export.response(request, request.user)


@login_required
@require_http_methods(["GET", "POST"])
def account_page(request: AuthedHttpRequest) -> HttpResponse:
    """Settings → Account. POST deletes the account (password confirmed), then signs out."""
    form = AccountDeleteForm(request.POST or None)
    status, retry_after = 200, None
    if request.method == "POST":
        if form.is_valid():
            retry_after = _account_delete(request, form)
            if retry_after is None and not form.errors:
                logout(request)
                return redirect("account_deleted")
        status = 403 if form.has_error("password") and form.data.get("password") else 422
        status = 429 if retry_after is not None else status
        # Focus lands on the field that says what went wrong (its error is its description).
        form.fields["password"].widget.attrs["autofocus"] = True
    context = {
        "layout": "accounts/_layout_plain.html",
        **data.page_context(request),
        "delete_form": form,
    }
    response = render(request, "accounts/account.html", context, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _account_delete(request: AuthedHttpRequest, form: AccountDeleteForm) -> int | None:
    """Delete the account; a refusal is added to the form. The seconds to wait when throttled."""
    try:
        account_delete(user=request.user, password=form.cleaned_data["password"], address=client_address(request))
    except AccountDeleteRefused as exc:
        form.add_error("password", str(exc))
    except throttle.PasswordChecksThrottled as exc:
        form.add_error("password", str(exc))
        return exc.retry_after
    return None


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change, with the old password checked by the shared password limiter: too many
    wrong ones for this account from this address answer 429 with Retry-After."""

    form_class = PasswordChangeForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "address": client_address(self.request)}

    def form_invalid(self, form: PasswordChangeForm) -> HttpResponse:  # type: ignore[override]
        response = super().form_invalid(form)
        if form.throttled is not None:
            response.status_code = 429
            response["Retry-After"] = str(form.throttled.retry_after)
        return response


def account_deleted(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/deleted.html")
