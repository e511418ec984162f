from __future__ import annotations

from django.http import HttpRequest

from chat.llm import get_chat_model


def model_info(request: HttpRequest) -> dict[str, object]:
    """The model in use, for the page header; the demo model is labelled plainly."""
    model = get_chat_model()
    return {"chat_model_label": model.label, "chat_model_is_demo": model.is_demo}
