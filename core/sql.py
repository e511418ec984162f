"""Names for the few statements written in SQL rather than the ORM (chat.limits.user_row, the memory block's
reads in memory.selectors): quoted as the connection quotes them, taken from the models, so a renamed
field or table cannot leave the SQL behind."""

from __future__ import annotations

from django.db import connection, models


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return connection.ops.quote_name(str(field.column))
