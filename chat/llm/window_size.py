"""A chat model's window, from the first source that knows it: CHAT_CONTEXT_TOKENS when the server is not
to be asked, the provider's model listing, what the server states (chat.llm.server_facts), the refusal of
a probe (chat.llm.window_probe), else CHAT_CONTEXT_TOKENS."""

from __future__ import annotations

from django.conf import settings

from chat.llm import catalogue, server_facts, window_probe


def context_tokens(model: str | None = None) -> int:
    """A chat model's window (the default chat model's without `model`): CHAT_CONTEXT_TOKENS when set, else
    what the provider's model listing or the server says, else the default."""
    configured = int(settings.CHAT_CONTEXT_TOKENS)
    if not settings.CHAT_CONTEXT_FROM_SERVER or settings.LLM_BACKEND != "openai":
        return configured
    model = model or catalogue.default_chat_model()
    if (listed := catalogue.stated_window(model)) is not None:
        return listed
    if not settings.OPENAI_BASE_URL:
        return configured
    stated = server_facts.server_window(settings.OPENAI_BASE_URL, model)
    return stated or window_probe.probed_window(settings.OPENAI_BASE_URL, model) or configured
