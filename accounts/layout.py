"""What the app's layout needs around a settings page of this app (the sidebar of conversations), filled
by the app that draws it. Accounts imports neither chat nor memory, so chat registers its part from its
AppConfig.ready:

    register_layout_context(lambda user: {...})   # chat/apps.py

and a page under Settings that extends the app's layout adds `layout_context(user)` to its context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounts.models import User

LayoutContext = Callable[[User], dict[str, Any]]

_providers: list[LayoutContext] = []


def register_layout_context(provider: LayoutContext) -> None:
    if provider not in _providers:
        _providers.append(provider)


def layout_context(user: User) -> dict[str, Any]:
    """Every registered provider's context for `user`, merged in registration order."""
    context: dict[str, Any] = {}
    for provider in _providers:
        context.update(provider(user))
    return context
