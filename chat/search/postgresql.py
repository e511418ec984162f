"""Conversation search on PostgreSQL: built-in full-text search with the `simple` configuration.

`chat_searchentry.terms` is a `tsvector` (chat.models.SearchTermsField) made from the terms chat.terms
gives, by `to_tsvector('simple', …)`, stripped of positions (a search is an AND of terms and a prefix,
never a phrase). A GIN index answers `@@`. The rows reference their message, conversation and user
with ON DELETE CASCADE through Django, so deleting any of them removes its entries in the same
transaction. No extension: `simple` and GIN are part of every PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

INDEX = "search_terms_gin"
ENTRIES = "chat_searchentry"

INSTALL = [f'CREATE INDEX {INDEX} ON {ENTRIES} USING gin ("terms")']
UNINSTALL = [f"DROP INDEX IF EXISTS {INDEX}"]


def tsquery(terms: list[str], *, prefix: bool) -> str:
    """A `to_tsquery` text: every term (quoted), the last one as a prefix when `prefix`."""
    quoted = [f"'{term}'" for term in terms]
    if prefix:
        quoted[-1] += ":*"
    return " & ".join(quoted)


def matching(
    entries: QuerySet[Any],
    *,
    user_id: int,
    terms: list[str],
    prefix: bool,
    many: bool = False,
) -> QuerySet[Any]:
    """The user's entries among `entries` holding every term. PostgreSQL's planner chooses between the
    GIN index and the user's newest-first B-tree by its own statistics (`many` is SQLite's hint)."""
    sql = f'"{ENTRIES}"."terms" @@ to_tsquery(\'simple\', %s)'
    return entries.filter(RawSQL(sql, [tsquery(terms, prefix=prefix)], output_field=BooleanField()), user_id=user_id)


def count(*, user_id: int, terms: list[str], prefix: bool, hidden: QuerySet[Any]) -> int:
    """How many of the user's entries hold every term, those of the `hidden` conversations (a queryset of
    their ids) left out: one statement, the GIN index finding the matches."""
    hidden_sql, hidden_params = hidden.query.sql_with_params()
    sql = (
        f"SELECT count(*) FROM {ENTRIES} WHERE terms @@ to_tsquery('simple', %s) AND user_id = %s"
        f" AND conversation_id NOT IN ({hidden_sql})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [tsquery(terms, prefix=prefix), user_id, *hidden_params])
        return int(cursor.fetchone()[0])


def size_bytes(connection: Any) -> int:
    """Bytes of the GIN index (the entries table not included)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s)", [INDEX])
        return int(cursor.fetchone()[0] or 0)
