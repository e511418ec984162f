"""The memory page's partials as the HTMX answers send them: each renders one template under
memory/templates/memory/ (the same ones memory/page.html includes, so the live page equals a reload),
and `response` joins the pieces of one answer (the main swap first, then the out-of-band ones).

The `*_context` functions are what those partials read; the full page (memory.views) uses them too.

Memory's HTML in the chat pages (notices, their poller, markers) is in memory/chat_fragments.py.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.translation import ngettext

from accounts.models import User
from memory import connected, selectors
from memory.context import memory_recall_summary
from memory.models import CONTENT_MAX, Memory

# --- what the partials read ------------------------------------------------------------------------


def list_context(user: User, query: str, scope: selectors.PageScope = None) -> dict[str, Any]:
    rows = selectors.memory_page_active(user=user, query=query, scope=scope)
    return {
        "memories": list(connected.with_last_read(rows)),
        "query": query,
        "scope": "" if scope is None else str(scope),
        "has_history": selectors.memory_has_history(user=user),
        "limit": CONTENT_MAX,
    }


def summary_context(user: User) -> dict[str, Any]:
    return {"usage": memory_recall_summary(user=user), "memory_enabled": user.memory_enabled}


def review_context(user: User) -> dict[str, Any]:
    return {"memory_review": user.memory_review, "review_choices": User.MemoryReview.choices}


def suggested_context(user: User) -> dict[str, Any]:
    return {"suggestions": selectors.memory_suggestions_waiting(user=user), **review_context(user)}


def history_context(user: User, query: str = "", scope: selectors.PageScope = None) -> dict[str, Any]:
    history = list(selectors.memory_history(user=user, query=query, scope=scope))
    rows = selectors.memory_history_restorations(user=user, rows=history)
    # A wording restored later is listed once, by its later copy: in the active list, or in History
    # when that copy left too (it has the same sources; deleting it takes the earlier versions along).
    return {"history": [row for row in rows if row.restored_as is None], "query": query}  # type: ignore[attr-defined]


# --- the pieces of an answer -----------------------------------------------------------------------


def part(request: HttpRequest, template: str, **context: Any) -> str:
    return render_to_string(template, {"limit": CONTENT_MAX, **context}, request=request)


def response(*parts: str, status: int = 200) -> HttpResponse:
    return HttpResponse("".join(parts), status=status)


def row_template(memory: Memory) -> str:
    return "memory/_row.html" if memory.is_active else "memory/_history_row.html"


def status_html(text: str) -> str:
    """A short confirmation for the page's live region (read out by screen readers)."""
    return render_to_string("memory/_status.html", {"text": text, "oob": True})


def error_status_html(text: str) -> str:
    """Why a write was refused, as the live region's content (the answer is retargeted there)."""
    return render_to_string("memory/_status.html", {"text": text, "error": True, "inner": True})


def summary_oob_html(request: HttpRequest, user: User) -> str:
    """The summary, and the Forget everything box whose state follows the count."""
    summary = summary_context(user)
    has_history = selectors.memory_has_history(user=user)
    return part(request, "memory/_summary.html", oob=True, **summary) + part(
        request, "memory/_forget.html", oob=True, history=has_history, **summary
    )


def history_html(request: HttpRequest, user: User, query: str, *, oob: bool) -> str:
    return part(request, "memory/_history.html", oob=oob, **history_context(user, query))


def empty_state_oob_html(request: HttpRequest, user: User, query: str) -> str:
    """The active list's empty state, whose wording depends on whether any history is left."""
    context = {"has_history": selectors.memory_has_history(user=user), "query": query}
    return part(request, "memory/_active_empty.html", oob=True, **context)


def row_added_html(request: HttpRequest, memory: Memory) -> str:
    """A new row at the top of the active list."""
    return part(request, "memory/_row_added.html", memory=memory)


def search_count(query: str, active: int, history: int) -> str:
    """What the live region says after a search."""
    if not query:
        return ""
    found = ngettext(
        "%(active)d active memory and %(history)d in History match “%(query)s”.",
        "%(active)d active memories and %(history)d in History match “%(query)s”.",
        active,
    )
    return found % {"active": active, "history": history, "query": query}
