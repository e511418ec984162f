from __future__ import annotations

from django import forms
from django.conf import settings


class ConversationCreateForm(forms.Form):
    """New conversation, optionally with its first message (sent over the WebSocket on arrival)."""

    message = forms.CharField(required=False, max_length=settings.CHAT_MAX_MESSAGE_CHARS, strip=False)
    temporary = forms.BooleanField(required=False, label="Temporary chat")


class ConversationRenameForm(forms.Form):
    title = forms.CharField(max_length=200, label="Title")
