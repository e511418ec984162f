"""The translation catalogues (locale/) are complete, and the committed .mo files match their .po files.

`make messages` refreshes the catalogues from the code; these tests fail when a translation is
missing or fuzzy, when a simple msgid in the code is not in the catalogue yet, or when a .mo file was
not compiled again after its .po file changed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

ROOT = Path(settings.BASE_DIR)
sys.path.insert(0, str(ROOT / "scripts"))

import catalogues  # noqa: E402

PO_FILES = catalogues.po_files()
LANGUAGES_TRANSLATED = [code for code, _name in settings.LANGUAGES if code != "en"]


def test_there_is_a_catalogue_for_each_language_and_domain() -> None:
    names = {f"{path.parent.parent.name}/{path.stem}" for path in PO_FILES}
    assert names == {"zh_Hans/django", "zh_Hans/djangojs"}


@pytest.mark.parametrize("path", PO_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_entry_is_translated_and_none_is_fuzzy(path: Path) -> None:
    assert catalogues.problems(path) == []


@pytest.mark.parametrize("path", PO_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_the_committed_mo_file_matches_its_po_file(path: Path) -> None:
    mo = path.with_suffix(".mo")
    assert mo.exists(), f"{mo} is missing: run `make messages`"
    assert catalogues.mo_catalog(mo) == catalogues.po_catalog(path), f"{mo} is stale: run `make messages`"


def test_the_checks_see_a_fuzzy_or_missing_translation(tmp_path: Path) -> None:
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=1; plural=0;\\n"\n\n'
        '#, fuzzy\nmsgid "Save"\nmsgstr "保存"\n\nmsgid "Cancel"\nmsgstr ""\n\n'
        'msgid "%(n)d memory"\nmsgid_plural "%(n)d memories"\nmsgstr[0] "%(n)d 条记忆"\n',
        encoding="utf-8",
    )
    assert catalogues.problems(po) == ["fuzzy: 'Save'", "untranslated: 'Cancel'"]
    assert catalogues.po_catalog(po) == {("%(n)d memory", 0): "%(n)d 条记忆"}


# --- msgids written in the code are in the catalogue -------------------------------------------------

_TEMPLATE_MSGID = re.compile(r"""\{%\s*translate\s+"((?:[^"\\]|\\.)*)"|\b_\("((?:[^"\\]|\\.)*)"\)""")
_PYTHON_MSGID = re.compile(r"""\b(?:_|gettext|gettext_lazy|gettext_noop)\(\s*"((?:[^"\\]|\\.)*)"\s*[,)]""")
_SCRIPT_MSGID = re.compile(r"""\bgettext\(\s*"((?:[^"\\]|\\.)*)"\s*\)""")


def _sources(pattern: str) -> list[Path]:
    skip = (".venv", "tests", "bench", "var", "scripts", "node_modules", "migrations")
    return [p for p in ROOT.rglob(pattern) if not any(part in skip for part in p.relative_to(ROOT).parts)]


def _msgids(domain: str) -> set[str]:
    path = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po"
    return {entry.msgid for entry in catalogues.parse(path)}


def test_every_simple_msgid_of_templates_and_python_is_in_the_catalogue() -> None:
    known = _msgids("django")
    missing = set()
    for path in _sources("*.html"):
        for match in _TEMPLATE_MSGID.finditer(path.read_text()):
            msgid = (match[1] if match[1] is not None else match[2]).replace('\\"', '"')
            if msgid not in known:
                missing.add(f"{path.relative_to(ROOT)}: {msgid!r}")
    for path in _sources("*.py"):
        for match in _PYTHON_MSGID.finditer(path.read_text()):
            msgid = match[1].encode().decode("unicode_escape").encode("latin-1").decode("utf-8")
            if msgid not in known:
                missing.add(f"{path.relative_to(ROOT)}: {msgid!r}")
    assert sorted(missing) == [], "run `make messages` and translate the new entries"


def test_every_msgid_of_the_scripts_is_in_the_catalogue() -> None:
    known = _msgids("djangojs")
    found = {m[1] for path in (ROOT / "static" / "js").glob("*.js") for m in _SCRIPT_MSGID.finditer(path.read_text())}
    assert sorted(found - known) == []


@pytest.mark.parametrize("language", LANGUAGES_TRANSLATED)
def test_django_loads_the_catalogue(language: str) -> None:
    with translation.override(language):
        assert translation.gettext("Memory") == "记忆"
        assert translation.gettext("Temporary chat") == "临时对话"
        assert translation.gettext("Forget everything") == "忘记全部"
