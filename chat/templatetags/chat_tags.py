from __future__ import annotations

from datetime import datetime

from django import template
from django.template import Context
from django.template.defaultfilters import date as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from chat import extensions
from chat.llm.errors import error_for_people
from chat.markdown import render_markdown

register = template.Library()


@register.simple_tag(takes_context=True)
def page_blocks(context: Context, slot: str) -> SafeString:
    """What other apps registered for this slot of a chat page (chat.extensions.PAGE_SLOTS), in the order
    they registered; "" when none did. Template blocks render with this template's context, as an
    `{% include %}` would; function blocks return HTML they rendered (escaped) themselves."""
    parts: list[str] = []
    for block in extensions.page_blocks(slot):
        if isinstance(block, str):
            assert context.template is not None  # always set while a template renders
            with context.push():
                parts.append(context.template.engine.get_template(block).render(context))
        else:
            parts.append(block({str(name): value for name, value in context.flatten().items()}))
    return mark_safe("".join(parts))  # rendered templates and already-escaped HTML only


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    """Render an assistant reply: Markdown, sanitised (see chat.markdown)."""
    return render_markdown(text or "")


@register.filter
def error_parts(text: str) -> tuple[str, str]:
    """A failed reply's error: (plain sentence, the provider's words for "Details"); see chat.llm.errors."""
    return error_for_people(text)


@register.filter
def local_time(value: datetime | None, kind: str = "date") -> SafeString:
    """A moment as `<time data-local>`: written here in the server's zone, the page's language's way
    ("6 Dec 2026", "2026年12月6日"), and again in the browser's zone by static/js/localtime.js."""
    if value is None:
        return SafeString("")
    chinese = (get_language() or "").startswith("zh")
    if kind == "datetime":
        shown = date_format(value, "Y年n月j日 H:i e" if chinese else "j M Y, H:i e")
    else:
        shown = date_format(value, "Y年n月j日" if chinese else "j M Y")
    return format_html('<time datetime="{}" data-local="{}">{}</time>', value.isoformat(), kind, shown)
