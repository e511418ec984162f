"""Conversation search on SQLite: an FTS5 table over `chat_searchentry.terms`, with the built-in
`unicode61` tokenizer.

The entries table holds the terms (chat.terms, space-separated), and the FTS5 table indexes them as its
external content (`content=`), so the words are stored once. Three triggers keep the index in step
with the entries table in the same transaction, whoever writes or deletes: the services, the cascade
that deletes a message, conversation or account, or a plain SQLite client. `detail=none`: a search is
an AND of terms (and a prefix), never a phrase, so no positions are kept (a smaller index);
`columnsize=0`: nothing is ranked, so no document sizes; `prefix='2 3'`: a word being typed ("pho")
is looked up in a prefix index rather than by merging every word it begins.

Each row is indexed with one more word: its owner's (`owner_term`, a private-use character and the user's
id, which unicode61 keeps as one token and chat.terms never gives, since a term is letters and digits
only). A search names it beside its terms, so the full-text index alone answers which of a user's entries
match, and `count` counts them without reading a row of the entries table. The triggers add it from the
row's `user_id`; the index then differs from its content table by that word, so it is filled by INSERT,
never by FTS5's `rebuild` (which would leave it out).

A migration that remakes `chat_searchentry` on SQLite (Django copies a table to alter it) drops the
triggers with the old table: it must run `install` again.

A plain `sqlite3` shell can read it: `unicode61` is built in, and so is everything else used here.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

TABLE = "chat_search_fts"
ENTRIES = "chat_searchentry"
OWNER = "\ue000"  # a private-use character: a token character to unicode61, never part of a term


def owner_term(user_id: int) -> str:
    """The word every entry of this user's is indexed with (besides its own terms)."""
    return f"{OWNER}{user_id}"


def _indexed(row: str) -> str:
    """What the index holds for a row (`new`, `old`, or the table): its terms and its owner's word."""
    return f"{row}.terms || ' ' || char({ord(OWNER)}) || {row}.user_id"


INSTALL = [
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    f"terms, content='{ENTRIES}', content_rowid='id', tokenize='unicode61', detail=none, columnsize=0,"
    " prefix='2 3')",
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}(rowid, terms) VALUES (new.id, {_indexed('new')}); END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}({TABLE}, rowid, terms) VALUES ('delete', old.id, {_indexed('old')}); END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE OF terms, user_id ON {ENTRIES} BEGIN"
    f" INSERT INTO {TABLE}({TABLE}, rowid, terms) VALUES ('delete', old.id, {_indexed('old')});"
    f" INSERT INTO {TABLE}(rowid, terms) VALUES (new.id, {_indexed('new')}); END",
    # The entries already written (by a migration, before this ran) join the index.
    f"INSERT INTO {TABLE}(rowid, terms) SELECT id, {_indexed(ENTRIES)} FROM {ENTRIES}",
]
UNINSTALL = [
    f"DROP TRIGGER IF EXISTS {TABLE}_insert",
    f"DROP TRIGGER IF EXISTS {TABLE}_delete",
    f"DROP TRIGGER IF EXISTS {TABLE}_update",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def fts_query(terms: list[str], *, prefix: bool, user_id: int) -> str:
    """An FTS5 query: the user's word and every term (each quoted, so no word is read as an operator),
    the last one as a prefix when `prefix`. Terms are letters and digits only (chat.terms)."""
    quoted = [f'"{term}"' for term in terms]
    if prefix:
        quoted[-1] += "*"
    return " AND ".join([f'"{owner_term(user_id)}"', *quoted])


def matching(
    entries: QuerySet[Any],
    *,
    user_id: int,
    terms: list[str],
    prefix: bool,
    many: bool = False,
) -> QuerySet[Any]:
    """The user's entries among `entries` holding every term.

    Which end SQLite's plan starts from matters more than anything else here. By default the user is
    compared as `+user_id`, which SQLite cannot answer from an index, so the plan starts from the
    full-text matches (looked up by rowid): a rare word costs next to nothing, where starting from a
    large account's entries costs the same whatever matched. With `many` (the caller counted
    thousands of matches) the plan walks the user's newest-first index instead and stops after one page,
    rather than sorting every match."""
    rows = RawSQL(
        f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH %s", [fts_query(terms, prefix=prefix, user_id=user_id)]
    )
    if many:
        return entries.filter(user_id=user_id, pk__in=rows)
    mine = RawSQL(f'+"{ENTRIES}"."user_id" = %s', [user_id], output_field=BooleanField())
    return entries.filter(mine, pk__in=rows)


def count(*, user_id: int, terms: list[str], prefix: bool, hidden: QuerySet[Any]) -> int:
    """How many of the user's entries hold every term, those of the `hidden` conversations (a queryset of
    their ids) left out. With none hidden, as usual, the full-text index counts alone (the owner's word
    is among the terms); otherwise each match's row is read for its conversation."""
    hidden_sql, hidden_params = hidden.query.sql_with_params()
    match = fts_query(terms, prefix=prefix, user_id=user_id)
    sql = (
        f"SELECT CASE WHEN EXISTS ({hidden_sql})"
        f" THEN (SELECT count(*) FROM {TABLE} JOIN {ENTRIES} ON {ENTRIES}.id = {TABLE}.rowid"
        f" WHERE {TABLE} MATCH %s AND +{ENTRIES}.user_id = %s AND {ENTRIES}.conversation_id NOT IN ({hidden_sql}))"
        f" ELSE (SELECT count(*) FROM {TABLE} WHERE {TABLE} MATCH %s) END"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*hidden_params, match, user_id, *hidden_params, match])
        return int(cursor.fetchone()[0])


def size_bytes(connection: Any) -> int:
    """Bytes of the index's own tables (the entries table not included), from SQLite's dbstat."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE %s", [f"{TABLE}%"])
        return int(cursor.fetchone()[0] or 0)
