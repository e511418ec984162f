"""Markdown for assistant replies: rendered with `markdown`, then sanitised with `nh3`.

Raw HTML in the model's text is never passed through: python-markdown's HTML handling is switched
off, so `<script>` shows up as the literal text the model wrote, and nh3 then removes anything that
is not on a short allow-list (defence in depth). Links open in a new tab with rel="nofollow noopener".

Two adjustments for how models write and how people read:
- nested lists indented by two spaces (as most models write them) nest, as they do with four
  (`normalise_list_indents`);
- wide code blocks and tables sit in a labelled, keyboard-focusable scroll box (`_scroll_boxes`),
  added after sanitising, around elements that carry no attributes of their own.
"""

from __future__ import annotations

import re

import markdown as md
import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

EXTENSIONS = ["fenced_code", "tables", "sane_lists", "nl2br"]

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},  # "language-python" from fenced code blocks
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}
URL_SCHEMES = {"http", "https", "mailto"}


def _converter() -> md.Markdown:
    converter = md.Markdown(extensions=EXTENSIONS, output_format="html")
    # Treat raw HTML as text: the model's "<img onerror=...>" is shown, not parsed.
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return converter


LIST_ITEM = re.compile(r"^( *)([-*+]|\d{1,9}[.)])( +|$)")
FENCE = re.compile(r"^ *(```|~~~)")
NESTED_INDENT = 4  # what python-markdown needs for a nested list


def normalise_list_indents(text: str) -> str:
    """Re-indent list items so each nesting level is four spaces deeper than its parent, whatever
    step the text used (two, three or four spaces). Lines inside fenced code are left alone."""
    out: list[str] = []
    lists = _OpenLists()
    in_fence = False
    for line in text.split("\n"):
        fence = FENCE.match(line) is not None
        in_fence ^= fence
        out.append(line if in_fence or fence else lists.reindent(line))
    return "\n".join(out)


class _OpenLists:
    """The list levels open at a line: their original indents, and how far the current item's lines move."""

    def __init__(self) -> None:
        self.indents: list[int] = []
        self.shift = 0

    def reindent(self, line: str) -> str:
        item = LIST_ITEM.match(line)
        if item:
            self._item(len(item.group(1)))
        elif line.strip() and not line.startswith(" "):
            self.indents, self.shift = [], 0  # a paragraph at the left margin ends the list
        if self.indents and self.shift and line.strip():
            line = " " * max(0, len(line) - len(line.lstrip(" ")) + self.shift) + line.lstrip(" ")
        return line

    def _item(self, indent: int) -> None:
        while self.indents and indent < self.indents[-1]:
            self.indents.pop()
        if not self.indents or indent > self.indents[-1]:
            self.indents.append(indent)
        self.shift = NESTED_INDENT * (len(self.indents) - 1) - indent


def _language(match: re.Match[str]) -> str:
    language = match.group(1)
    if not language:
        return gettext("Code")
    return escape(gettext("%(language)s code") % {"language": language.capitalize()})


def _scroll_boxes(html: str) -> str:
    """Wide code and tables scroll sideways; a keyboard user can focus the box to scroll it, and
    a screen reader hears what it is. nh3 has already removed every attribute of <pre> and <table>."""
    html = re.sub(
        r'<pre><code(?: class="language-([\w+#-]{1,30})")?',
        lambda m: (
            f'<div class="code-block"><pre tabindex="0" role="region" aria-label="{_language(m)}">'
            + m.group(0)[len("<pre>") :]
        ),
        html,
    )
    html = html.replace("</code></pre>", "</code></pre></div>")
    html = html.replace(
        "<table>",
        '<div class="table-scroll" tabindex="0" role="region" aria-label="{}"><table>'.format(gettext("Table")),
    )
    return html.replace("</table>", "</table></div>")


_PLAIN_RULES = [
    (re.compile(r"^```.*$|^~~~.*$", re.MULTILINE), ""),  # code fences
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # links and images keep their text
    (re.compile(r"^\s{0,3}(#{1,6}|>+|[-*+]|\d{1,9}[.)])\s+", re.MULTILINE), ""),  # headings, quotes, list markers
    (re.compile(r"(\*\*|__|~~|`+)(.+?)\1"), r"\2"),  # strong, strikethrough, code
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"), r"\1"),  # _emphasis_
]


def plain_text(text: str) -> str:
    """Markdown's words without its syntax, on one line (for titles: "**Plan** a `trip`" → "Plan a trip")."""
    for pattern, replacement in _PLAIN_RULES:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def render_markdown(text: str) -> SafeString:
    """Markdown text from the model to sanitised HTML that is safe to insert into the page."""
    html = _converter().convert(normalise_list_indents(text))
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="nofollow noopener",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
    return mark_safe(_scroll_boxes(cleaned))
