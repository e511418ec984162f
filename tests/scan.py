"""The whole-database scan that proves a deletion left no copy (SPEC §8, "Complete forgetting").

    hits = scan_for("Is allergic to peanuts.")     # [] when no table holds it

Every table and every column, found through Django's introspection of the live database (so a table
a later feature adds is covered without touching this), cast to text, is searched for the text as
written, with JSON's escapes, and with `\\uXXXX` escapes (how SQLite's JSON columns keep non-ASCII
text). A feature that stores a copy of memory text or a user's words proves its redaction with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import connection


@dataclass(frozen=True)
class Hit:
    table: str
    column: str
    row: str  # the row's primary key (as text), "" when the table has none
    value: str


def forms(text: str) -> list[str]:
    return list(dict.fromkeys([text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]))


def scan_for(text: str) -> list[Hit]:
    searched = forms(text)
    quote = connection.ops.quote_name
    hits: list[Hit] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
            pk = connection.introspection.get_primary_key_column(cursor, table)
            key = f"CAST({quote(pk)} AS TEXT)" if pk else "''"
            for column in columns:
                # SQLite hands a column over as stored (a BLOB as bytes, searched below): its CAST to TEXT
                # fails on bytes that are not UTF-8, such as a full-text index's own pages.
                value_sql = quote(column) if connection.vendor == "sqlite" else f"CAST({quote(column)} AS TEXT)"
                cursor.execute(f"SELECT {key}, {value_sql} FROM {quote(table)}")
                for row, value in cursor.fetchall():
                    if isinstance(value, memoryview | bytes):
                        value = bytes(value).decode("utf-8", "replace")
                    elif value is not None and not isinstance(value, str):
                        value = str(value)
                    if value and any(form in value for form in searched):
                        hits.append(Hit(table, column, str(row), value[:200]))
    return hits


def display_log_hits(hits: list[Hit]) -> list[Hit]:
    """The hits in the assistant's replies of the display log (chat.Message), which keeps the reply the
    user saw until they delete the conversation."""
    from chat.models import Message

    table = Message._meta.db_table
    replies = {str(pk) for pk in Message.objects.filter(role=Message.Role.ASSISTANT).values_list("pk", flat=True)}
    return [hit for hit in hits if hit.table == table and hit.column == "content" and hit.row in replies]


def scan_beyond_display_log(text: str) -> list[Hit]:
    """`scan_for`, without the assistant replies the display log keeps on purpose."""
    hits = scan_for(text)
    allowed = display_log_hits(hits)
    return [hit for hit in hits if hit not in allowed]
