from __future__ import annotations

from django import forms

from memory.models import CONTENT_MAX
from memory.services import MemoryRejected, memory_content_clean


class MemoryForm(forms.Form):
    """One memory sentence, checked by the same rule the service and the API use."""

    # No max_length: a too-long text must come back with a clear message, not be cut by the browser.
    content = forms.CharField(strip=False, required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_content(self) -> str:
        try:
            return memory_content_clean(self.cleaned_data.get("content", ""))
        except MemoryRejected as exc:
            raise forms.ValidationError(str(exc)) from exc

    @property
    def limit(self) -> int:
        return CONTENT_MAX


class MemorySwitchForm(forms.Form):
    enabled = forms.ChoiceField(choices=[("on", "On"), ("off", "Off")])

    @property
    def is_on(self) -> bool:
        return self.cleaned_data["enabled"] == "on"


class ForgetAllForm(forms.Form):
    purge = forms.BooleanField(required=False)
