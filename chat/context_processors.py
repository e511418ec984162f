from __future__ import annotations

from functools import cache
from typing import Any

from django.http import HttpRequest

from chat import selectors
from chat.llm import catalogue, get_chat_model


def model_info(request: HttpRequest) -> dict[str, Any]:
    """The model in use, for the page header; the demo model is labelled plainly. The picker's choices
    are looked up only by a page that shows them (a template calls the function), once per page."""
    model = get_chat_model()
    return {
        "chat_model_label": model.label,
        "chat_model_is_demo": model.is_demo,
        "chat_model_default": catalogue.default_chat_model(),
        "chat_model_options": cache(selectors.chat_model_choices),
    }
