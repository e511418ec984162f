"""What a web process does once, on first use, on the way to its first turns' first tokens: done as the
server starts (chat.turn.runner.lifespan), off the event loop, before it takes any connection.

Done on first use instead, each ran on the event loop that every turn and page of the process shares, so
a burst of first turns on a fresh server all waited for the sum before any reply began to stream
(docs/benchmarks.md, "A fresh server's first turns"):

- the URLconf: the first `{% url %}` in a turn's page fragment imports it, and with it every app's views
  and API schemas (about a second of one CPU);
- the chat model, its HTTP client for the server's event loop and the SDK's chat resources
  (chat.llm.warm_up);
- the partial templates the live page is sent (compiled once, kept by Django's cached loader);
- the chat model's context window, which may be asked of the provider (chat.llm.window_size).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from django.conf import settings
from django.template.loader import get_template
from django.urls import get_resolver
from django.utils import translation

from chat import llm
from chat.llm import window_size

PARTIALS = Path(__file__).resolve().parent.parent / "templates" / "chat"


def warm_up(loop: asyncio.AbstractEventLoop) -> None:
    """The one-time work on the way of turns served on `loop`. Raises what the model's build raises (a
    misconfigured provider: its turns fail with their own error)."""
    resolver = get_resolver()
    for code, _ in settings.LANGUAGES:  # the URLconf's import, then its names in each language
        with translation.override(code):
            resolver.reverse_dict  # noqa: B018
    for path in sorted(PARTIALS.glob("_*.html")):
        get_template(f"chat/{path.name}")
    llm.warm_up(loop)
    window_size.context_tokens()
