"""Conversation search on SQLite: an FTS5 table over `chat_searchentry.terms`, with the built-in
`unicode61` tokenizer.

The entries table holds the terms (chat.terms, space-separated), and the FTS5 table indexes them as its
external content (`content=`), so the words are stored once. Three triggers keep the index in step
with the entries table in the same transaction, whoever writes or deletes: the services, the cascade
that deletes a message, conversation or account, or a plain SQLite client. `detail=none`: a search is
an AND of terms (and a prefix), never a phrase, so no positions are kept (a smaller index).

A plain `sqlite3` shell can read it: `unicode61` is built in, and so is everything else used here.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.db.models.expressions import RawSQL

TABLE = "chat_search_fts"
ENTRIES = "chat_searchentry"

INSTALL = [
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    f"terms, content='{ENTRIES}', content_rowid='id', tokenize='unicode61', detail=none)",
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}(rowid, terms) VALUES (new.id, new.terms); END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}({TABLE}, rowid, terms) VALUES ('delete', old.id, old.terms); END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE OF terms ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}({TABLE}, rowid, terms) VALUES ('delete', old.id, old.terms);"
    f" INSERT INTO {TABLE}(rowid, terms) VALUES (new.id, new.terms); END",
    # The entries already written (by the migration, before this ran) join the index.
    f"INSERT INTO {TABLE}({TABLE}) VALUES ('rebuild')",
]
UNINSTALL = [
    f"DROP TRIGGER IF EXISTS {TABLE}_insert",
    f"DROP TRIGGER IF EXISTS {TABLE}_delete",
    f"DROP TRIGGER IF EXISTS {TABLE}_update",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def install(schema_editor: Any) -> None:
    for statement in INSTALL:
        schema_editor.execute(statement)


def uninstall(schema_editor: Any) -> None:
    for statement in UNINSTALL:
        schema_editor.execute(statement)


def fts_query(terms: list[str], *, prefix: bool) -> str:
    """An FTS5 query: every term (each quoted, so no word is read as an operator), the last one as a
    prefix when `prefix`. Terms are letters and digits only (chat.terms)."""
    quoted = [f'"{term}"' for term in terms]
    if prefix:
        quoted[-1] += "*"
    return " AND ".join(quoted)


def match(terms: list[str], *, prefix: bool) -> Q:
    """A filter of SearchEntry: the entries holding every term."""
    rows = RawSQL(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH %s", [fts_query(terms, prefix=prefix)])
    return Q(pk__in=rows)


def compact(connection: Any) -> None:
    """Merge the index into one segment: what deleted entries left in older segments is dropped (FTS5
    records a deletion as a marker until its segments are merged)."""
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('optimize')")


def size_bytes(connection: Any) -> int:
    """Bytes of the index's own tables (the entries table not included), from SQLite's dbstat."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE %s", [f"{TABLE}%"])
        return int(cursor.fetchone()[0] or 0)
