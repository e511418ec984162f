from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.services import InvalidMessage, message_content_clean


class ConversationCreateForm(forms.Form):
    """New conversation, optionally with its first message (sent over the WebSocket on arrival)."""

    message = forms.CharField(required=False, strip=False)
    temporary = forms.BooleanField(required=False, label=_("Temporary chat"))
    model = forms.CharField(required=False, max_length=200)  # checked by the service (chat.llm.catalogue)
    project = forms.IntegerField(required=False, min_value=1)  # one of the user's projects (else 404)

    def clean_message(self) -> str:
        message: str = self.cleaned_data["message"]
        if not message.strip():
            return ""  # a conversation may start empty
        try:
            return message_content_clean(message)  # the same rules, and words, as every other way in
        except InvalidMessage as exc:
            raise forms.ValidationError(str(exc)) from exc


class ConversationRenameForm(forms.Form):
    title = forms.CharField(
        max_length=200,
        label=_("Title"),
        error_messages={"required": _("A title cannot be empty. Type one, or Cancel.")},
    )
