"""Download all my data: one JSON document, written as it is read (SPEC §8).

    {"format": "memora-export/1", "exported_at": "…", "account": {…}, "settings": {…},
     "projects": [...], "conversations": [...], "memories": [...]}

`account` and `settings` come from the user row; every other section from an exporter an app
registered (accounts.data). Sections are JSON arrays whose items may hold iterators (a conversation's
messages, read in chunks): `chunks` encodes them lazily, so the document of an account with 50,000
messages is never in memory whole (bench/export.py measures it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import date, datetime
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone

from accounts import data
from accounts.models import User

FORMAT = "memora-export/1"
# Encoded text is handed on in pieces of about this many characters (fewer trips to the event loop).
PIECE_CHARS = 64 * 1024


def _scalar(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


_FLAT = (str, int, float, bool, datetime, date, UUID)


def _encode(value: Any) -> Iterator[str]:
    """JSON text for `value`, where lists, tuples and any other iterator are streamed item by item."""
    if isinstance(value, dict) and not all(isinstance(item, _FLAT) or item is None for item in value.values()):
        yield from _encode_object(value)
    elif isinstance(value, Iterable) and not isinstance(value, str | bytes | dict):
        yield from _encode_array(value)
    else:  # a flat object (a message row: one call) or a scalar
        yield json.dumps(value, default=_scalar, ensure_ascii=False)


def _encode_object(value: dict[Any, Any]) -> Iterator[str]:
    yield "{"
    for index, (key, item) in enumerate(value.items()):
        yield ("," if index else "") + json.dumps(str(key), ensure_ascii=False) + ":"
        yield from _encode(item)
    yield "}"


def _encode_array(value: Iterable[Any]) -> Iterator[str]:
    yield "["
    for index, item in enumerate(value):
        if index:
            yield ","
        yield from _encode(item)
    yield "]"


def account_section(user: User) -> dict[str, Any]:
    return {
        "id": user.pk,
        "username": user.get_username(),
        "email": user.email,
        "date_joined": user.date_joined,
        "last_login": user.last_login,
    }


def settings_section(user: User) -> dict[str, Any]:
    return {"memory_enabled": user.memory_enabled, "memory_review": user.memory_review, "language": user.language}


def document(user: User) -> dict[str, Any]:
    """The export as a dict whose sections are lazy iterables (what `chunks` streams)."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "exported_at": timezone.now(),
        "account": account_section(user),
        "settings": settings_section(user),
    }
    for name, exporter in data.exporters().items():
        doc[name] = exporter(user)
    return doc


def chunks(user: User) -> Iterator[str]:
    """The export document's text in pieces of about PIECE_CHARS characters."""
    buffer: list[str] = []
    size = 0
    for piece in _encode(document(user)):
        buffer.append(piece)
        size += len(piece)
        if size >= PIECE_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)


async def achunks(user: User) -> AsyncIterator[str]:
    """`chunks` for an ASGI response: each piece is read on Django's one sync thread (where the
    database connection lives), so the event loop never blocks and nothing is read ahead."""
    iterator = chunks(user)

    def next_piece() -> str | None:
        return next(iterator, None)

    while (piece := await sync_to_async(next_piece, thread_sensitive=True)()) is not None:
        yield piece


def response(request: HttpRequest, user: User) -> StreamingHttpResponse:
    """The document as a JSON download, streamed (asynchronously under ASGI, where Django would
    otherwise read a synchronous iterator into memory whole before sending it)."""
    body = achunks(user) if isinstance(request, ASGIRequest) else chunks(user)
    streamed = StreamingHttpResponse(body, content_type="application/json; charset=utf-8")
    stamp = timezone.now().strftime("%Y-%m-%d")
    streamed["Content-Disposition"] = f'attachment; filename="memora-{user.pk}-{stamp}.json"'
    streamed["Cache-Control"] = "no-store"
    return streamed
