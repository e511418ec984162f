from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import ALL_SCOPES, Scope, User
from accounts.scopes import project_choices
from accounts.throttle import PasswordChecksThrottled, password_check


class SignupForm(UserCreationForm):  # type: ignore[type-arg]
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


class ApiTokenForm(forms.Form):
    EXPIRY_CHOICES = [("30", _("In 30 days")), ("90", _("In 90 days")), ("365", _("In a year")), ("", _("Never"))]

    name = forms.CharField(
        max_length=100, required=False, label=_("Name"), help_text=_("To tell your tokens apart, e.g. “laptop script”.")
    )
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, initial="90", label=_("Expires"))
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices,
        initial=ALL_SCOPES,
        widget=forms.CheckboxSelectMultiple,
        label=_("It may"),
        help_text=_("A tool connected over MCP or the OpenAI-compatible endpoint can do only what you tick."),
        error_messages={"required": _("Tick at least one thing the token may do.")},
    )

    project = forms.TypedChoiceField(
        choices=[],
        coerce=int,
        empty_value=None,
        required=False,
        label=_("Project"),
        help_text=_("Limit it to one project: it sees only what a chat in that project would."),
    )

    def __init__(self, *args: Any, user_id: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        projects = project_choices(user_id) if user_id is not None else []
        if projects:
            field: forms.TypedChoiceField = self.fields["project"]  # type: ignore[assignment]
            field.choices = [("", _("None: everything the scopes allow")), *projects]
        else:
            del self.fields["project"]

    def project_id(self) -> int | None:
        value = self.cleaned_data.get("project")
        return int(value) if value else None

    def expires_at(self) -> datetime | None:
        days = self.cleaned_data.get("expires_in")
        return timezone.now() + timedelta(days=int(days)) if days else None


class AccountDeleteForm(forms.Form):
    password = forms.CharField(
        label=_("Your password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text=_("To confirm that it is you."),
    )


class PasswordChangeForm(auth_forms.PasswordChangeForm):
    """The old password is checked by the shared password limiter (accounts.throttle.password_check); past
    its limit the field says so and `throttled` holds why (the view answers 429)."""

    def __init__(self, *args: Any, address: str = "", **kwargs: Any) -> None:
        self.address = address
        self.throttled: PasswordChecksThrottled | None = None
        super().__init__(*args, **kwargs)

    def clean_old_password(self) -> str:
        old_password: str = self.cleaned_data["old_password"]
        try:
            right = password_check(user=self.user, password=old_password, address=self.address)
        except PasswordChecksThrottled as exc:
            self.throttled = exc
            raise forms.ValidationError(str(exc), code="throttled") from exc
        if not right:
            raise forms.ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password
