"""Opening an uploaded export safely, and reading its conversations one at a time.

An upload is either a ZIP (ChatGPT's and Claude's data exports) or the `conversations.json` inside one.
Before anything is written the container is checked (`open_export`): its type, the ZIP's structure, every
member's path (no `..`, no absolute path), the sizes it declares against IMPORT_MAX_BYTES and how much they
expand (a decompression bomb), and that it holds a `conversations.json`. Reading then streams that file with
ijson (`conversation_items`), so only one conversation is ever in memory; the stream counts the bytes it
gives (progress) and refuses to give more than the ZIP declared, whatever the archive's headers claim.
Everything refused raises `Rejected` with a sentence for the person who uploaded it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

import ijson
from django.conf import settings
from django.utils.formats import number_format
from django.utils.translation import gettext as _

CONVERSATIONS = "conversations.json"
PROJECTS = "projects.json"
# How much one ZIP member may expand: text compresses about 10:1, a bomb 1000:1 and more.
MAX_RATIO = 200
RATIO_FLOOR = 1024 * 1024  # small members may compress as they like
MAX_MEMBERS = 100_000


class Rejected(Exception):
    """The file cannot be imported; `str(exc)` says why, `status` is the HTTP status to answer."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Export:
    path: Path
    # The conversations file inside the ZIP ("" when the upload is that file itself).
    member: str
    projects_member: str
    size: int  # the conversations file's (uncompressed) size in bytes


def max_bytes() -> int:
    return int(settings.IMPORT_MAX_BYTES)


def too_big(size: int) -> Rejected:
    limit = number_format(max_bytes(), force_grouping=True)
    return Rejected(
        _("The export is too large: %(size)s bytes; the limit is %(limit)s bytes (IMPORT_MAX_BYTES).")
        % {"size": number_format(size, force_grouping=True), "limit": limit},
        status=413,
    )


def open_export(path: Path) -> Export:
    with path.open("rb") as handle:
        head = handle.read(4)
        handle.seek(0)
        if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
            return _open_zip(path)
        first = _first_significant(handle)
    if first in (b"[", b"{"):
        size = path.stat().st_size
        if size > max_bytes():
            raise too_big(size)
        return Export(path=path, member="", projects_member="", size=size)
    raise Rejected(
        _(
            "This is neither a ZIP nor a JSON file. Upload the ZIP of a ChatGPT or Claude data export, "
            "or its conversations.json."
        )
    )


def _first_significant(handle: IO[bytes]) -> bytes:
    chunk = handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return chunk[:1]


def _open_zip(path: Path) -> Export:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Rejected(_("The ZIP file is damaged or truncated (%(error)s).") % {"error": exc}) from exc
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise Rejected(_("The ZIP holds too many files (%(count)s).") % {"count": len(members)})
        total = 0
        for info in members:
            _check_member(info)
            total += info.file_size
        if total > max_bytes():
            raise too_big(total)
        conversations = _find(members, CONVERSATIONS)
        if conversations is None:
            raise Rejected(_("The ZIP has no conversations.json: is it a ChatGPT or Claude data export?"))
        projects = _find(members, PROJECTS)
    return Export(
        path=path,
        member=conversations.filename,
        projects_member=projects.filename if projects is not None else "",
        size=conversations.file_size,
    )


def _check_member(info: zipfile.ZipInfo) -> None:
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        raise Rejected(_("The ZIP holds a file with an unsafe path (%(name)s).") % {"name": info.filename[:200]})
    if info.flag_bits & 0x1:
        raise Rejected(_("The ZIP is encrypted; export it again without a password."))
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise Rejected(
            _("The ZIP looks like a decompression bomb: %(name)s expands %(ratio)s times.")
            % {"name": info.filename[:200], "ratio": info.file_size // max(info.compress_size, 1)},
            status=413,
        )


def _find(members: list[zipfile.ZipInfo], basename: str) -> zipfile.ZipInfo | None:
    """The shallowest member with this name, at the top or one folder down (an export unzipped and zipped again)."""
    found = [
        m
        for m in members
        if not m.is_dir() and PurePosixPath(m.filename).name == basename and len(PurePosixPath(m.filename).parts) <= 2
    ]
    return min(found, key=lambda m: len(PurePosixPath(m.filename).parts)) if found else None


class CountingReader:
    """A binary stream that counts what it gives and refuses to give more than `limit` bytes."""

    def __init__(self, raw: IO[bytes], *, limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson asks for nothing first, to learn whether the stream gives bytes or text
            return b""
        chunk = self.raw.read(size if size > 0 else 65536)
        self.count += len(chunk)
        if self.count > self.limit:
            raise too_big(self.count)
        return chunk


@contextmanager
def member_stream(export: Export, member: str) -> Iterator[CountingReader]:
    """A member of the export (or the uploaded JSON itself when `member` is "") as a counted stream."""
    try:
        if not export.member:
            with export.path.open("rb") as handle:
                yield CountingReader(handle, limit=max_bytes())
            return
        with zipfile.ZipFile(export.path) as archive, archive.open(member) as handle:
            yield CountingReader(handle, limit=max_bytes())  # type: ignore[arg-type]
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise Rejected(_("The ZIP file is damaged or truncated (%(error)s).") % {"error": exc}) from exc


def json_items(stream: CountingReader, *, what: str) -> Iterator[Any]:
    """The items of the JSON array in `stream`, one at a time. A file that is not a list, not UTF-8, not
    JSON or cut short raises Rejected (after the items before the problem were given)."""
    try:
        head = stream.read(65536).removeprefix(b"\xef\xbb\xbf")
        if not head.strip():
            raise Rejected(_("%(file)s is empty.") % {"file": what})
        if head.lstrip()[:1] != b"[":
            raise Rejected(
                _("%(file)s is not a list of conversations: is it a ChatGPT or Claude export?") % {"file": what}
            )
        yield from ijson.items(_Prefixed(head, stream), "item", use_float=True)
    except ijson.JSONError as exc:
        raise Rejected(_json_problem(str(exc), what)) from exc
    except (zipfile.BadZipFile, EOFError) as exc:
        raise Rejected(_("The ZIP file is damaged or truncated (%(error)s).") % {"error": exc}) from exc
    except UnicodeDecodeError as exc:
        raise Rejected(_("%(file)s is not valid UTF-8 text.") % {"file": what}) from exc


class _Prefixed:
    """`head` (already read, to look at the first byte), then the rest of `stream`."""

    def __init__(self, head: bytes, stream: CountingReader) -> None:
        self.head = head
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        if self.head:
            chunk, self.head = self.head, b""
            return chunk
        return self.stream.read(size)


def _json_problem(detail: str, what: str) -> str:
    if "UTF8" in detail or "UTF-8" in detail or "utf-8" in detail:
        return _("%(file)s is not valid UTF-8 text.") % {"file": what}
    if "premature EOF" in detail or "Incomplete" in detail:
        return _("%(file)s is cut short (truncated): upload the whole file again.") % {"file": what}
    return _("%(file)s is not valid JSON.") % {"file": what}
