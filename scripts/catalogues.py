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


def parse(path: Path) -> list[Entry]:
    """The entries of a .po file, the header (msgid "") included."""
    entries: list[Entry] = []
    entry = Entry()
    current: tuple[str, int] | None = None
    started = False

    def finish() -> None:
        nonlocal entry, started
        if started:
            entries.append(entry)
        entry, started = Entry(), False

    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("#~"):
            entry.obsolete = True
            continue
        if not line:
            finish()
            current = None
            continue
        if line.startswith("#,"):
            if started:
                finish()
            entry.flags |= {flag.strip() for flag in line[2:].split(",")}
            continue
        if line.startswith("#"):
            if started and current is not None and current[0] == "msgstr":
                finish()
            continue
        if line.startswith('"'):
            assert current is not None, f"{path}: a string outside an entry: {raw!r}"
            kind, index = current
            value = _unquote(line)
            if kind == "msgstr":
                entry.msgstr[index] = entry.msgstr.get(index, "") + value
            elif kind == "msgid":
                entry.msgid += value
            elif kind == "msgid_plural":
                entry.msgid_plural = (entry.msgid_plural or "") + value
            else:
                entry.msgctxt = (entry.msgctxt or "") + value
            continue
        keyword, _, rest = line.partition(" ")
        if keyword in ("msgctxt", "msgid") and started and current is not None and current[0] == "msgstr":
            finish()
        started = True
        value = _unquote(rest)
        if keyword == "msgctxt":
            entry.msgctxt, current = value, ("msgctxt", 0)
        elif keyword == "msgid":
            entry.msgid, current = value, ("msgid", 0)
        elif keyword == "msgid_plural":
            entry.msgid_plural, current = value, ("msgid_plural", 0)
        elif keyword == "msgstr":
            entry.msgstr[0], current = value, ("msgstr", 0)
        elif keyword.startswith("msgstr["):
            index = int(keyword[len("msgstr[") : -1])
            entry.msgstr[index], current = value, ("msgstr", index)
        else:
            raise ValueError(f"{path}: cannot read {raw!r}")
    finish()
    return [e for e in entries if not e.obsolete]


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
