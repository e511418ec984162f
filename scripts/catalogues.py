"""The translation catalogues under locale/, read without gettext's tools.

`make messages` refreshes them (Django's makemessages, which needs GNU gettext) and compiles the .mo
files, which are committed: `make run` on a fresh machine needs no gettext. tests/test_catalogues.py
uses this module to check that every entry is translated (nothing fuzzy or empty) and that each
committed .mo file says exactly what its .po file says.

    python scripts/catalogues.py            # lists untranslated and fuzzy entries; exit status 1 if any
"""

from __future__ import annotations

import ast
import gettext
import sys
from dataclasses import dataclass, field
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAINS = ("django", "djangojs")


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)  # plural index -> text (0 alone when not plural)
    flags: set[str] = field(default_factory=set)
    obsolete: bool = False

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr.values())

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags


def _unquote(text: str) -> str:
    return str(ast.literal_eval(text))  # a PO string is a C string: the same escapes as Python's


class _Reader:
    """One pass over a .po file: the entries read so far, the one being read and the field its strings go to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[Entry] = []
        self.entry = Entry()
        self.current: tuple[str, int] | None = None
        self.started = False

    def finish(self) -> None:
        if self.started:
            self.entries.append(self.entry)
        self.entry, self.started = Entry(), False

    def in_msgstr(self) -> bool:
        return self.started and self.current is not None and self.current[0] == "msgstr"

    def read(self, raw: str) -> None:
        line = raw.strip()
        if line.startswith("#~"):
            self.entry.obsolete = True
        elif not line:
            self.finish()
            self.current = None
        elif line.startswith("#"):
            self.comment(line)
        elif line.startswith('"'):
            self.continuation(raw, line)
        else:
            self.keyword(raw, line)

    def comment(self, line: str) -> None:
        if line.startswith("#,"):
            if self.started:
                self.finish()
            self.entry.flags |= {flag.strip() for flag in line[2:].split(",")}
        elif self.in_msgstr():
            self.finish()

    def continuation(self, raw: str, line: str) -> None:
        assert self.current is not None, f"{self.path}: a string outside an entry: {raw!r}"
        kind, index = self.current
        value = _unquote(line)
        entry = self.entry
        if kind == "msgstr":
            entry.msgstr[index] = entry.msgstr.get(index, "") + value
        elif kind == "msgid":
            entry.msgid += value
        elif kind == "msgid_plural":
            entry.msgid_plural = (entry.msgid_plural or "") + value
        else:
            entry.msgctxt = (entry.msgctxt or "") + value

    def keyword(self, raw: str, line: str) -> None:
        keyword, _, rest = line.partition(" ")
        if keyword in ("msgctxt", "msgid") and self.in_msgstr():
            self.finish()
        self.started = True
        value = _unquote(rest)
        entry = self.entry
        if keyword == "msgctxt":
            entry.msgctxt, self.current = value, ("msgctxt", 0)
        elif keyword == "msgid":
            entry.msgid, self.current = value, ("msgid", 0)
        elif keyword == "msgid_plural":
            entry.msgid_plural, self.current = value, ("msgid_plural", 0)
        elif keyword == "msgstr":
            entry.msgstr[0], self.current = value, ("msgstr", 0)
        elif keyword.startswith("msgstr["):
            index = int(keyword[len("msgstr[") : -1])
            entry.msgstr[index], self.current = value, ("msgstr", index)
        else:
            raise ValueError(f"{self.path}: cannot read {raw!r}")


def parse(path: Path) -> list[Entry]:
    """The entries of a .po file, the header (msgid "") included."""
    reader = _Reader(path)
    for raw in path.read_text(encoding="utf-8").splitlines():
        reader.read(raw)
    reader.finish()
    return [e for e in reader.entries if not e.obsolete]


def po_files() -> list[Path]:
    return sorted(LOCALE_DIR.glob("*/LC_MESSAGES/*.po"))


def problems(path: Path) -> list[str]:
    """Entries that are not ready: empty or fuzzy translations (the header aside), and a fuzzy header."""
    found = []
    for entry in parse(path):
        if entry.msgid == "" and entry.msgctxt is None:
            if entry.fuzzy:
                found.append("the header is marked fuzzy")
            continue
        if entry.fuzzy:
            found.append(f"fuzzy: {entry.msgid!r}")
        elif not entry.translated:
            found.append(f"untranslated: {entry.msgid!r}")
    return found


def mo_catalog(path: Path) -> dict[object, str]:
    """What a compiled .mo file holds, as gettext reads it (the header, msgid "", aside)."""
    with path.open("rb") as handle:
        catalog = dict(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]
    catalog.pop("", None)
    return catalog


def po_catalog(path: Path) -> dict[object, str]:
    """What the .mo compiled from a .po file must hold: its translated, non-fuzzy entries."""
    catalog: dict[object, str] = {}
    for entry in parse(path):
        if entry.msgid == "" or entry.fuzzy or not entry.translated:
            continue
        key = entry.msgid if entry.msgctxt is None else f"{entry.msgctxt}\x04{entry.msgid}"
        if entry.msgid_plural is None:
            catalog[key] = entry.msgstr[0]
        else:
            for index, text in entry.msgstr.items():
                catalog[(key, index)] = text
    return catalog


def main() -> int:
    status = 0
    for path in po_files():
        for problem in problems(path):
            print(f"{path.relative_to(LOCALE_DIR.parent)}: {problem}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
