"""Names for the few statements written in SQL rather than the ORM (chat.limits.user_row, the memory block's
reads in memory.selectors, a turn's start, the token check): quoted as the connection quotes them, taken from
the models, so a renamed field or table cannot leave the SQL behind; and model instances from such rows,
converted as the ORM converts what it reads."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

M = TypeVar("M", bound=models.Model)
Converters = list[tuple[list[Callable[..., Any]], Any]]


def table(model: type[models.Model]) -> str:
    return _quoted(connection.vendor, model, None)


def column(model: type[models.Model], name: str) -> str:
    return _quoted(connection.vendor, model, name)


@functools.cache
def _quoted(vendor: str, model: type[models.Model], name: str | None) -> str:
    # Kept per database kind (a process talks to one): these names are built on every turn's way to its first token.
    if name is None:
        return connection.ops.quote_name(model._meta.db_table)
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return connection.ops.quote_name(str(field.column))


def columns(model: type[models.Model], alias: str) -> str:
    """Every stored column of `model`, as `alias`.column, in the order `instance` takes them."""
    return _columns(connection.vendor, model, alias)


@functools.cache
def _columns(vendor: str, model: type[models.Model], alias: str) -> str:
    return ", ".join(f"{alias}.{connection.ops.quote_name(str(f.column))}" for f in model._meta.concrete_fields)


def prepared(model: type[models.Model], name: str, value: Any) -> Any:
    """`value` as the field `name` of `model` sends it to the database (a UUID is text on SQLite …)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field.get_db_prep_value(value, connection)


# Per connection (each thread has its own) and model: what the ORM would apply to each column it reads.
_converters: WeakKeyDictionary[BaseDatabaseWrapper, dict[type[models.Model], Converters]] = WeakKeyDictionary()


def _converters_of(model: type[models.Model], wrapper: BaseDatabaseWrapper) -> Converters:
    by_model = _converters.setdefault(wrapper, {})
    if model not in by_model:
        cols = [field.get_col(model._meta.db_table) for field in model._meta.concrete_fields]
        by_model[model] = [
            ([*wrapper.ops.get_db_converters(col), *col.get_db_converters(wrapper)], col) for col in cols
        ]
    return by_model[model]


def value(model: type[models.Model], name: str, stored: Any) -> Any:
    """One column's value as read by a statement, converted as the ORM converts that field's (JSON decoded …)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    wrapper = connections[DEFAULT_DB_ALIAS]
    converters, col = _converters_of(model, wrapper)[model._meta.concrete_fields.index(field)]
    return _converted(stored, converters, col, wrapper)


def instance(model: type[M], values: Sequence[Any]) -> M:
    """A `model` from a row's values read in `columns(model)`'s order, each converted as the ORM converts it
    (aware datetimes, decoded JSON, UUIDs, booleans on SQLite), as if the ORM had read it."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    converted = [
        _converted(stored, converters, col, wrapper)
        for stored, (converters, col) in zip(values, _converters_of(model, wrapper), strict=True)
    ]
    return model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in model._meta.concrete_fields], converted)


def _converted(stored: Any, converters: list[Callable[..., Any]], col: Any, wrapper: BaseDatabaseWrapper) -> Any:
    for convert in converters:
        stored = convert(stored, col, wrapper)
    return stored
