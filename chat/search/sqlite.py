"""Conversation search on SQLite: an FTS5 table over `chat_searchentry.terms`, with the built-in
`unicode61` tokenizer.

The entries table holds the terms (chat.terms, space-separated), and the FTS5 table indexes them as its
external content (`content=`), so the words are stored once. Three triggers keep the index in step
with the entries table in the same transaction, whoever writes or deletes: the services, the cascade
that deletes a message, conversation or account, or a plain SQLite client. `detail=none`: a search is
an AND of terms (and a prefix), never a phrase, so no positions are kept (a smaller index);
`columnsize=0`: nothing is ranked, so no document sizes; `prefix='2 3'`: a word being typed ("pho")
is looked up in a prefix index rather than by merging every word it begins.

A migration that remakes `chat_searchentry` on SQLite (Django copies a table to alter it) drops the
triggers with the old table: it must run `install` again.

A plain `sqlite3` shell can read it: `unicode61` is built in, and so is everything else used here.
"""

from __future__ import annotations

from typing import Any

from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

TABLE = "chat_search_fts"
ENTRIES = "chat_searchentry"

INSTALL = [
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    f"terms, content='{ENTRIES}', content_rowid='id', tokenize='unicode61', detail=none, columnsize=0,"
    " prefix='2 3')",
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


def fts_query(terms: list[str], *, prefix: bool) -> str:
    """An FTS5 query: every term (each quoted, so no word is read as an operator), the last one as a
    prefix when `prefix`. Terms are letters and digits only (chat.terms)."""
    quoted = [f'"{term}"' for term in terms]
    if prefix:
        quoted[-1] += "*"
    return " AND ".join(quoted)


def matching(
    entries: QuerySet[Any], *, user_id: int, terms: list[str], prefix: bool, many: bool = False
) -> QuerySet[Any]:
    """The user's entries among `entries` holding every term.

    Which end SQLite's plan starts from matters more than anything else here. By default the user is
    compared as `+user_id`, which SQLite cannot answer from an index, so the plan starts from the
    full-text matches (looked up by rowid): a rare word costs next to nothing, where starting from a
    large account's entries costs the same whatever matched. With `many` (the caller counted
    thousands of matches) the plan walks the user's newest-first index instead and stops after one page,
    rather than sorting every match."""
    rows = RawSQL(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH %s", [fts_query(terms, prefix=prefix)])
    if many:
        return entries.filter(user_id=user_id, pk__in=rows)
    mine = RawSQL(f'+"{ENTRIES}"."user_id" = %s', [user_id], output_field=BooleanField())
    return entries.filter(mine, pk__in=rows)


def size_bytes(connection: Any) -> int:
    """Bytes of the index's own tables (the entries table not included), from SQLite's dbstat."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE %s", [f"{TABLE}%"])
        return int(cursor.fetchone()[0] or 0)
