"""Everything an account holds: one registry that the account's export and its deletion go through
(SPEC §8, "Complete forgetting").

accounts imports neither chat nor memory (chat runs without memory, accounts without both), so each
app registers, from its AppConfig.ready, what it keeps for a user:

    from accounts import data
    data.register_exporter("conversations", conversations_export)   # a section of the export
    data.register_eraser("chat", chat_erase)                         # its rows, on account deletion

- An **exporter** `fn(user) -> Iterable` gives one section of "Download all my data" (`GET
  /api/me/export`): a JSON array whose items may hold iterators themselves (a conversation's
  messages), so a large account is streamed, never held in memory whole.
- An **eraser** `fn(user) -> None` deletes (or redacts) every row of its app holding the user's words
  or memories, inside the one transaction of `account_delete`, before the user row goes. Rows with a
  ForeignKey to the user and `on_delete=CASCADE` would go anyway; an eraser is for what does not (a
  copy in another user's row, a JSON blob, an index, a socket to close after commit).
- A **page context** `fn(request) -> dict` adds to Settings → Account's template context (chat gives
  its sidebar, so the page sits in the app's layout, and sets `layout` to the template to extend).

A new feature that stores a user's words registers here, and the account-deletion scan
(tests/test_forgetting_scan.py) proves it left nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.http import HttpRequest

    from accounts.models import User

Exporter = Callable[["User"], Iterable[Any]]
Eraser = Callable[["User"], None]
PageContext = Callable[["HttpRequest"], dict[str, Any]]

_exporters: dict[str, Exporter] = {}
_erasers: dict[str, Eraser] = {}
_page_contexts: dict[str, PageContext] = {}


def register_exporter(name: str, exporter: Exporter) -> None:
    """`name` is the section's key in the export document ("conversations", "memories", ...)."""
    _exporters[name] = exporter


def exporters() -> dict[str, Exporter]:
    return dict(_exporters)


def register_eraser(name: str, eraser: Eraser) -> None:
    _erasers[name] = eraser


def erasers() -> list[Eraser]:
    """In the reverse order of registration: apps that build on others (memory on chat) go first."""
    return list(reversed(_erasers.values()))


def register_page_context(name: str, provider: PageContext) -> None:
    _page_contexts[name] = provider


def page_context(request: HttpRequest) -> dict[str, Any]:
    context: dict[str, Any] = {}
    for provider in _page_contexts.values():
        context.update(provider(request))
    return context
