"""Markdown for assistant replies: rendered with `markdown`, then sanitised with `nh3`.

Raw HTML in the model's text is never passed through: python-markdown's HTML handling is switched
off, so `<script>` shows up as the literal text the model wrote, and nh3 then removes anything that
is not on a short allow-list (defence in depth). Links open in a new tab with rel="nofollow noopener".
"""

from __future__ import annotations

import markdown as md
import nh3
from django.utils.safestring import SafeString, mark_safe

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


def render_markdown(text: str) -> SafeString:
    """Markdown text from the model to sanitised HTML that is safe to insert into the page."""
    html = _converter().convert(text)
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="nofollow noopener",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
    return mark_safe(cleaned)
