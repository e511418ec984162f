"""`search_history`: the chat model's way to look through the user's earlier conversations, so it can
answer "which phone did you recommend last time?" or "did I say I liked downtown before?".

It searches what chat's conversation search finds for the user (chat/search/): their own messages and
replies in other conversations (never the current one, whose words the model already has; never a
temporary one), newest first, as a few dated excerpts with the conversation's title; and the user's
memories that are no longer current, with the dates they were true. Who is searched comes from the
turn, never from the model: only the user's own words can come back. The result is bounded in
characters (`RESULT_MAX_CHARS`).

Offered where `flush_memory` is: not in a temporary conversation, not with memory off.

Each line of the result names the message or memory it quotes (`[message 12]`, `[memory 4]`): a copy
of the user's words kept in the agent state can be found by id when its source is deleted. A message that
taught or quoted a memory deleted since is left out (memory.replay).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.utils.translation import gettext_lazy

from chat.extensions import TurnContext
from chat.search.query import SearchQuery, SearchRejected, search_hits, search_page, search_query_clean
from chat.terms import terms
from memory import selectors
from memory.replay import withheld_conversations, withheld_ids
from memory.scopes import learns_here, scope_filter, scope_of_conversation

RESULT_MAX_CHARS = 2000
HITS = 6
EXCERPT_CHARS = 220
MEMORIES = 3
MEMORIES_SCANNED = 500  # the newest invalidated memories looked at

# Short on purpose: every request of a turn carries it.
DESCRIPTION = (
    "Search the user's earlier conversations and past memories, for something said before that is not "
    "in this conversation. query: a few keywords in the user's language (all must match)."
)

NOT_HERE = "Earlier conversations are not searched here (a temporary conversation, or memory is off)."
BAD_QUERY = "The search could not run: {reason} Call it again with a few keywords."
NOTHING = 'Nothing in the user\'s earlier conversations or past memories matches "{query}".'


def _day(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _bounds(arguments: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    after, before = _day(arguments.get("after")), _day(arguments.get("before"))
    since = datetime.combine(after, time.min, tzinfo=UTC) if after else None
    until = datetime.combine(before + timedelta(days=1), time.min, tzinfo=UTC) if before else None
    return since, until


def _quote(text: str) -> str:
    return "“" + " ".join(text.split()) + "”"


def _holds(held: set[str], query: SearchQuery) -> bool:
    """Whether a text with terms `held` matches as the search index would: every term (the last one
    also as a prefix while typed)."""
    last = query.terms[-1] if query.prefix else None
    return all(term in held or (term == last and any(h.startswith(term) for h in held)) for term in query.terms)


def _past_memories(ctx: TurnContext, query: SearchQuery, since: datetime | None, until: datetime | None) -> list[str]:
    """Lines for the user's invalidated memories of the scopes this chat uses (memory.scopes) holding every
    term of the query, newest first."""
    history = selectors.memory_history_for_search(user_id=ctx.user.pk, since=since, until=until)
    history = history.filter(scope_filter(scope_of_conversation(ctx.conversation)))
    lines = []
    for memory in history[:MEMORIES_SCANNED]:
        if not _holds(set(terms(memory.content)), query):
            continue
        assert memory.invalid_at is not None
        reason = memory.get_invalid_reason_display().lower() if memory.invalid_reason else "no longer current"
        lines.append(
            f"- [memory {memory.pk}] {_quote(memory.content)}: true from {memory.created_at.date().isoformat()} "
            f"until {memory.invalid_at.date().isoformat()} ({reason})"
        )
        if len(lines) == MEMORIES:
            break
    return lines


def _hit_lines(ctx: TurnContext, query: SearchQuery, since: datetime | None, until: datetime | None) -> list[str]:
    # In an isolated project only its own conversations; elsewhere none of an isolated project's (SPEC §9).
    view = scope_of_conversation(ctx.conversation)
    within = {"project": view.project_id} if view.isolated else {"hide_isolated": True}
    _, page = search_page(
        user=ctx.user, query=query, limit=2 * HITS, exclude=ctx.conversation, since=since, until=until, **within
    )
    # A message that taught or quoted a memory deleted since is not given to the model (memory.replay).
    # A conversation's title comes from its first message: not shown when one of its messages is withheld.
    withheld = withheld_ids([entry.message_id for entry in page if entry.message_id is not None])
    hidden_titles = withheld_conversations([entry.conversation_id for entry in page if entry.message_id is None])
    page = [entry for entry in page if _shown(entry, withheld=withheld, hidden_titles=hidden_titles)][:HITS]
    return [_hit_line(hit) for hit in search_hits(page, query, size=EXCERPT_CHARS)]


def _shown(entry: Any, *, withheld: set[int], hidden_titles: set[Any]) -> bool:
    if entry.message_id is None:
        return entry.conversation_id not in hidden_titles
    return entry.message_id not in withheld


def _hit_line(hit: Any) -> str:
    day, title = hit.created_at.date().isoformat(), _quote(hit.conversation_title)
    if hit.message_id is None:
        return f"- [conversation {hit.conversation_id}] {day}: a conversation titled {title}"
    who = "the user wrote" if hit.role == "user" else "you (the assistant) replied"
    return f"- [message {hit.message_id}] {day}, in {title}, {who}: {_quote(hit.excerpt)}"


def _bounded(sections: list[tuple[str, list[str]]]) -> str:
    """The sections' heads and lines, dropping the lines that would pass RESULT_MAX_CHARS."""
    out: list[str] = []
    size = 0
    for head, lines in sections:
        if not lines:
            continue
        for line in [head, *lines]:
            if size + len(line) + 1 > RESULT_MAX_CHARS:
                out.append("(more left out)")
                return "\n".join(out)
            out.append(line)
            size += len(line) + 1
    return "\n".join(out)


class SearchHistoryTool:
    name = "search_history"
    description = DESCRIPTION
    activity_label = gettext_lazy("Looking through earlier conversations…")
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 200},
            "after": {"type": "string", "description": "YYYY-MM-DD"},
            "before": {"type": "string", "description": "YYYY-MM-DD"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def available(self, ctx: TurnContext) -> bool:
        """As flush_memory: not in a temporary conversation, not with memory off (nor in a project whose memory
        is off)."""
        return bool(ctx.user.memory_enabled) and learns_here(ctx.conversation)

    def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
        if not self.available(ctx):
            return NOT_HERE
        try:
            query = search_query_clean(arguments.get("query"))
        except SearchRejected as exc:
            return BAD_QUERY.format(reason=str(exc))
        since, until = _bounds(arguments)
        messages = _hit_lines(ctx, query, since, until)
        memories = _past_memories(ctx, query, since, until)
        if not messages and not memories:
            return NOTHING.format(query=" ".join(query.text.split()))
        return _bounded(
            [
                ("From earlier conversations, newest first (excerpts; dates in UTC):", messages),
                ("Memories that are no longer current, with when they were true:", memories),
            ]
        )


search_history = SearchHistoryTool()


# --- the offline demo model calls it for a question about something said before -------------------

_RECALL = re.compile(
    r"\b(?:what|which|when|did|have)\b.*\b(?:i|you|we)\b.*\b(?:say|said|tell|told|mention(?:ed)?|recommend(?:ed)?"
    r"|suggest(?:ed)?|talk(?:ed)?)\b|\blast time\b|\bearlier conversation"
    r"|上次|上回|之前.*说|以前.*说|说过|推荐过|聊过|提到过",
    re.I,
)
_ABOUT = re.compile(r"\b(?:about|regarding|on)\s+(.+)$", re.I)
_FILLER_EN = re.compile(
    r"\b(?:what|which|when|did|do|does|have|has|i|you|we|me|my|ever|say|said|tell|told|mention(?:ed)?"
    r"|recommend(?:ed)?|suggest(?:ed)?|talk(?:ed)?|last|time|before|earlier|conversation|the|a|an|to|that"
    r"|remember|us|was|were|is|it)\b",
    re.I,
)
_FILLER_ZH = re.compile(
    r"上次|上回|之前|以前|你|我|说过|说的|推荐过|推荐的|推荐|聊过|提到过|提到|关于|的|是|什么|哪款|哪个|哪|吗|呢|过|了"
)


def demo_query(text: str) -> str | None:
    """The keywords the demo model searches for when `text` asks about something said before, else None."""
    if not _RECALL.search(text):
        return None
    about = _ABOUT.search(text)
    rest = about.group(1) if about else _FILLER_EN.sub(" ", text)
    rest = _FILLER_ZH.sub(" ", rest)
    words = " ".join(re.sub(r"[^\w]+", " ", rest).split())
    return words or None


def demo_tool_trigger(text: str, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The demo model's tool trigger (chat.extensions): search_history for "what did I say about …"."""
    query = demo_query(text)
    if "search_history" in tools and query:
        return "search_history", {"query": query}
    return None
