"""Conversation search: full-text over a user's own messages (both roles) and conversation titles.

One interface, one backend per database, chosen like Django's own backends by the connection's vendor:
`chat.search.sqlite` (FTS5, `unicode61`) and `chat.search.postgresql` (`simple` tsvector + GIN). Both
index the same thing: the terms chat.terms gives (English light stems, Chinese overlapping character
pairs, so "手机" is found inside "智能手机" without knowing how the text would be segmented), stored as
space-separated words that the database's built-in tokenizer splits again. A query goes through the
same `terms`.

- index.py: writes, in the transaction that writes the text: by chat.services (titles), chat.turn (a turn's
  message and title with its reply; crash recovery for a turn that died) and the migration.
- query.py: the reads (parse a query, find, page), scoped to one user.
- excerpts.py: the plain-text excerpt of a hit and where the match is in it.
- api.py: `GET /api/search`; the page is chat.views.search (templates chat/_search_*.html, search.html).

Rows live in `chat.models.SearchEntry`, with a ForeignKey (CASCADE) to their message, conversation and
user: deleting any of those removes its entries, and on SQLite a trigger removes them from FTS5.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection as default_connection

BACKENDS = {"sqlite": "chat.search.sqlite", "postgresql": "chat.search.postgresql"}


def backend(connection: Any = None) -> ModuleType:
    """The search backend of `connection` (the default database's when None)."""
    vendor = (connection or default_connection).vendor
    if vendor not in BACKENDS:
        raise ImproperlyConfigured(f"Conversation search supports {', '.join(BACKENDS)}, not {vendor}.")
    return import_module(BACKENDS[vendor])


def install(schema_editor: Any) -> None:
    """Create the backend's own structures (its INSTALL statements): SQLite's FTS5 table and triggers,
    PostgreSQL's GIN index."""
    for statement in backend(schema_editor.connection).INSTALL:
        schema_editor.execute(statement)


def uninstall(schema_editor: Any) -> None:
    for statement in backend(schema_editor.connection).UNINSTALL:
        schema_editor.execute(statement)
