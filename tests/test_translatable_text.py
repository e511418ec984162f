"""Every piece of text a person reads on a page is translatable (SPEC §8, "Languages").

Templates: each template is read with Django's own lexer; what `{% translate %}` and
`{% blocktranslate %}` produce, variables and other tags become placeholders, and the rest is parsed
as HTML. Any text node, or text attribute (title, aria-label, placeholder, alt, hx-confirm), that
still holds English words is reported. Scripts (static/js): every string literal that reads as words
must be an argument of gettext() or ngettext().

The allow-lists are short on purpose: the product's name and the names of keys and elements.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.conf import settings
from django.template.base import Lexer, TokenType

ROOT = Path(settings.BASE_DIR)
TEMPLATE_DIRS = [
    ROOT / "templates",
    ROOT / "accounts" / "templates",
    ROOT / "chat" / "templates",
    ROOT / "memory" / "templates",
]
SCRIPTS = sorted((ROOT / "static" / "js").glob("*.js"))

TEXT_ATTRIBUTES = {
    "title",
    "aria-label",
    "placeholder",
    "alt",
    "hx-confirm",
    "aria-description",
    "aria-roledescription",
}
ALLOWED_TEXT = {"Memora"}  # the product's name, the same in every language
ALLOWED_SCRIPT_LITERALS = {"use strict", "Enter", "Escape", "Tab", "TEXTAREA"}  # never shown

WORDS = re.compile(r"[A-Za-z]{2,}")
TRANSLATED = "\ue000"  # a private-use character: what a translate tag produces
OTHER = "\ue001"  # what a variable or another tag produces


def _skeleton(source: str) -> str:
    """The template with translated text and every tag replaced by placeholders."""
    out: list[str] = []
    skip_until: str | None = None
    for token in Lexer(source).tokenize():
        content = token.contents.strip()
        if skip_until is not None:
            if token.token_type == TokenType.BLOCK and content.split()[0] == skip_until:
                skip_until = None
            continue
        if token.token_type == TokenType.TEXT:
            out.append(token.contents)
        elif token.token_type == TokenType.BLOCK:
            name = content.split()[0]
            if name in ("translate", "trans"):
                out.append(TRANSLATED)
            elif name in ("blocktranslate", "blocktrans"):
                out.append(TRANSLATED)
                skip_until = "end" + name
            elif name == "comment":
                skip_until = "endcomment"
            elif content in ("block body_class", "block header_class"):  # a class list, not text
                out.append(OTHER)
                skip_until = "endblock"
            elif "_(" in content:  # e.g. {% include … with label=_("Retry") %}
                out.append(TRANSLATED)
            else:
                out.append(OTHER)
        elif token.token_type == TokenType.VAR:
            out.append(OTHER)
    return "".join(out)


class _TextFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._raw = 0  # inside <script> or <style>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._raw += 1
        for name, value in attrs:
            if name in TEXT_ATTRIBUTES and value:
                self._check(value, f"{tag}[{name}]")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._raw = max(0, self._raw - 1)

    def handle_data(self, data: str) -> None:
        if not self._raw:
            self._check(data, "text")

    def _check(self, text: str, where: str) -> None:
        plain = text.replace(TRANSLATED, " ").replace(OTHER, " ")
        for word in ALLOWED_TEXT:
            plain = plain.replace(word, " ")
        if WORDS.search(plain):
            self.found.append(f"{where}: {' '.join(plain.split())!r}")


def untranslated_template_text(source: str) -> list[str]:
    finder = _TextFinder()
    finder.feed(_skeleton(source))
    finder.close()
    return finder.found


def _templates() -> list[Path]:
    return sorted(path for folder in TEMPLATE_DIRS for path in folder.rglob("*.html"))


def test_the_check_finds_text_outside_translate_tags() -> None:
    assert untranslated_template_text("<p>Hello <b>{{ name }}</b></p>") == ["text: 'Hello'"]
    assert untranslated_template_text('<button aria-label="Close">×</button>') == ["button[aria-label]: 'Close'"]
    assert untranslated_template_text('<p>{% translate "Hello" %} <b>{{ name }}</b></p>') == []
    assert untranslated_template_text("<p>{% blocktranslate %}Hi {{ name }}{% endblocktranslate %}</p>") == []
    assert untranslated_template_text('<a title="{% translate "Open" %}" href="/x">Memora</a>') == []


def test_every_template_text_is_translatable() -> None:
    problems = []
    for path in _templates():
        problems += [f"{path.relative_to(ROOT)}: {found}" for found in untranslated_template_text(path.read_text())]
    assert problems == []


# --- scripts ------------------------------------------------------------------------------------------

_COMMENT = re.compile(r"/\*.*?\*/|(?<![:\"'\\])//[^\n]*", re.S)
_LITERAL = re.compile(
    r"(?P<call>\b(?:gettext|ngettext)\(\s*)?(?P<quote>[\"'])(?P<text>(?:\\.|(?!(?P=quote)).)*)(?P=quote)"
)
_CODE_LIKE = re.compile(r"[#\[\]>={}]|^htmx:|^\.")


def untranslated_script_text(source: str) -> list[str]:
    found = []
    for match in _LITERAL.finditer(_COMMENT.sub("", source)):
        text = match["text"]
        if match["call"] or text in ALLOWED_SCRIPT_LITERALS or _CODE_LIKE.search(text):
            continue  # translated, a key name, or a selector or event name
        if " " in text.strip():
            if re.search(r"[A-Za-z]{2,} [A-Za-z]{2,}", text):
                found.append(text)
        elif re.fullmatch(r"[A-Z][a-z]+[.!?…:]?", text.strip()):  # one English word ("Copied")
            found.append(text)
    return found


def test_the_script_check_finds_literal_words() -> None:
    source = (
        'a.textContent = "Copied"; b = gettext("Copy"); c.querySelector("#x .y"); e.key === "Enter"; '
        'f("htmx:afterSwap")'
    )
    assert untranslated_script_text(source) == ["Copied"]
    assert untranslated_script_text('box.textContent = "Reply stopped. " + x;') == ["Reply stopped. "]


def test_every_script_text_is_translatable() -> None:
    problems = []
    for path in SCRIPTS:
        problems += [f"{path.name}: {text!r}" for text in untranslated_script_text(path.read_text())]
    assert problems == []
