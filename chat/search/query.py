"""Reads: parse a search, find a user's matching entries, newest first, and page them into hits.

Only the user's own entries, ever. Temporary conversations are left out, except the one open in the
sidebar (`current`), as the sidebar lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from accounts.models import User
from chat.models import Conversation, Project, SearchEntry
from chat.search import backend
from chat.search.excerpts import Matcher, excerpt
from chat.terms import is_han, terms

QUERY_MAX_CHARS = 200
QUERY_MAX_TERMS = 16
OFFSET_MAX = 10_000
PAGE_MAX = 100
MANY = 2000  # matches past which a page is found newest-first rather than by sorting every match


class SearchRejected(ValueError):
    """A search that cannot run (empty, too long): the text says why. `status` is the HTTP status."""

    status = 400


@dataclass(frozen=True)
class SearchQuery:
    text: str
    terms: list[str]  # distinct, in order
    prefix: bool  # the last term is matched as a prefix (it may still be being typed)

    @property
    def matcher(self) -> Matcher:
        last = self.terms[-1] if self.prefix else ""
        return Matcher(frozenset(self.terms), last)


def search_query_clean(text: object) -> SearchQuery:
    """Parse what the user typed; raises SearchRejected with a sentence saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise SearchRejected(_("Type something to search for."))
    if len(text) > QUERY_MAX_CHARS:
        raise SearchRejected(
            _("The search is too long: %(length)s characters; the limit is %(limit)s.")
            % {"length": len(text), "limit": QUERY_MAX_CHARS}
        )
    words = list(dict.fromkeys(terms(text)))[:QUERY_MAX_TERMS]
    if not words:
        raise SearchRejected(_("The search has no letters or digits to look for."))
    last = words[-1]
    # A Latin word still being typed matches as a prefix ("pho" finds "phone"); so does a lone Chinese
    # character (its pairs start with it). A finished Chinese pair or a single letter does not.
    typing = not text[-1].isspace() and (len(last) == 1 if is_han(last) else len(last) >= 2)
    return SearchQuery(text=text, terms=words, prefix=typing)


def hidden_conversations(
    *, user: User, current: Conversation | None = None, hide_isolated: bool = False
) -> QuerySet[Any]:
    """The ids of the user's conversations a search leaves out: the temporary ones but `current`, and with
    `hide_isolated` those of isolated projects."""
    hidden = Conversation.objects.filter(owner=user, temporary=True)
    if hide_isolated:
        hidden = Conversation.objects.filter(
            Q(temporary=True) | Q(project__memory_mode=Project.MemoryMode.ISOLATED), owner=user
        )
    if current is not None:
        hidden = hidden.exclude(pk=current.pk)
    return hidden.values("pk")


def search_count(*, user: User, query: SearchQuery, **scope: Any) -> int:
    """How many entries match (`scope` as search_entries takes it). A search of everything the user may see
    (no project, conversation left out or time bounds) is counted by the backend in one statement from
    its index; a narrower one through the entries."""
    narrowed = {name: value for name, value in scope.items() if name not in ("current", "hide_isolated")}
    if any(value is not None for value in narrowed.values()):
        return search_entries(user=user, query=query, **scope).count()
    hidden = hidden_conversations(
        user=user, current=scope.get("current"), hide_isolated=bool(scope.get("hide_isolated"))
    )
    return int(backend().count(user_id=user.pk, terms=query.terms, prefix=query.prefix, hidden=hidden))


def search_entries(
    *,
    user: User,
    query: SearchQuery,
    current: Conversation | None = None,
    exclude: Conversation | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    many: bool = False,
    project: int | Literal["none"] | None = None,
    hide_isolated: bool = False,
) -> QuerySet[SearchEntry]:
    """The user's entries matching `query`, newest first. Temporary conversations are left out unless
    one is `current`; `exclude` leaves one conversation out; `since`/`until` bound the time. `project` keeps
    one project's conversations ("none": those in no project); `hide_isolated` leaves out the conversations of
    isolated projects (what stays in one never shows elsewhere). `many`: the caller counted more than MANY
    matches (the backend may plan for that)."""
    hidden = hidden_conversations(user=user, current=current, hide_isolated=hide_isolated)
    # Scoped to the user by the backend, which writes that condition the way its planner does best with.
    entries = backend().matching(
        SearchEntry.objects.all(), user_id=user.pk, terms=query.terms, prefix=query.prefix, many=many
    )
    entries = entries.exclude(conversation__in=hidden)
    if exclude is not None:
        entries = entries.exclude(conversation=exclude)
    if project == "none":
        entries = entries.filter(conversation__project__isnull=True)
    elif project is not None:
        entries = entries.filter(conversation__project_id=project)
    if since is not None:
        entries = entries.filter(created_at__gte=since)
    if until is not None:
        entries = entries.filter(created_at__lt=until)
    return entries.order_by("-created_at", "-id")


@dataclass(frozen=True)
class SearchHit:
    message_id: int | None  # None: the conversation's title matched
    conversation_id: UUID
    conversation_title: str
    role: str | None
    excerpt: str
    highlights: list[list[int]]
    created_at: datetime

    @property
    def segments(self) -> list[tuple[str, bool]]:
        """The excerpt as `(text, matched)` pieces, for a template to mark the matches (escaping each)."""
        pieces, at = [], 0
        for start, end in self.highlights:
            if start > at:
                pieces.append((self.excerpt[at:start], False))
            pieces.append((self.excerpt[start:end], True))
            at = end
        if at < len(self.excerpt):
            pieces.append((self.excerpt[at:], False))
        return pieces


@dataclass(frozen=True)
class SearchPage:
    total: int
    hits: list[SearchHit]


def search_hits(entries: list[SearchEntry], query: SearchQuery, *, size: int | None = None) -> list[SearchHit]:
    """Entries (with message and conversation selected) as hits, each with its excerpt."""
    hits = []
    for entry in entries:
        message, conversation = entry.message, entry.conversation
        text = message.content if message is not None else conversation.title
        body, highlights = excerpt(text, query.matcher) if size is None else excerpt(text, query.matcher, size=size)
        hits.append(
            SearchHit(
                message_id=entry.message_id,
                conversation_id=entry.conversation_id,
                conversation_title=conversation.display_title,
                role=message.role if message is not None else None,
                excerpt=body,
                highlights=highlights,
                created_at=entry.created_at,
            )
        )
    return hits


def search_page(
    *, user: User, query: SearchQuery, limit: int, offset: int = 0, **scope: Any
) -> tuple[int, list[SearchEntry]]:
    """How many entries match (`scope` as search_entries takes it), and one page of them, newest first,
    with their message and conversation."""
    total = search_count(user=user, query=query, **scope)
    if offset >= total:
        return total, []
    entries = search_entries(user=user, query=query, many=total > MANY, **scope)
    return total, list(entries.select_related("message", "conversation").defer("terms")[offset : offset + limit])


def search(
    *,
    user: User,
    text: object,
    limit: int = 20,
    offset: int = 0,
    current: Conversation | None = None,
    project: int | Literal["none"] | None = None,
) -> SearchPage:
    """One page of the user's hits for `text`, newest first, and how many there are in all; with `project`,
    only in that project's conversations ("none": in those of no project)."""
    query = search_query_clean(text)
    limit, offset = max(1, min(limit, PAGE_MAX)), max(0, min(offset, OFFSET_MAX))
    total, page = search_page(user=user, query=query, limit=limit, offset=offset, current=current, project=project)
    return SearchPage(total=total, hits=search_hits(page, query))
