"""What connected tools do with a user's memories (SPEC §9): the MCP server's tools and the `/v1`
endpoint call these, never the models.

- `search`: the memories a chat turn's block would hold for a text, ranked by the very function a
  turn uses (`memory.context.block_for_turn`): the relevant ones first, then the always-used ones.
- `propose`: a sentence a tool offers. The judge's code-level guards apply (a credential or a
  permission grant is refused, a sensitive fact is marked); it waits as a suggestion with the tool's
  name as its source, or is saved at once when the token may write.
- `forget`: an active memory moves to History (restorable by the user); a suggestion is discarded.
- `reads_record`: every read is logged against the token and the tool's name, and counts as the
  memories' last use ("Cursor read 3 memories at 14:02" in Settings → Memory and the tokens list).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import ApiToken, User
from chat.extensions import TurnContext
from chat.models import Conversation, Message
from memory import lexicon
from memory.context import block_for_turn, candidates
from memory.extraction.judge.content import CREDENTIAL, clean_content
from memory.models import Memory, MemoryAccess, MemoryRead
from memory.scopes import ScopeView, memories_for_scope, scope_filter
from memory.selectors import in_scope, memories_active, memories_suggested
from memory.services import (
    DUPLICATE,
    MemoryConflict,
    MemoryRejected,
    _ensure_room,
    _lock_user,
    memory_content_clean,
    memory_delete,
    memory_retract,
)
from memory.tasks import embed_memories_later

SEARCH_LIMIT_MAX = 50
READS_SHOWN = 10


def query_context(*, user: User, text: str, view: ScopeView | None = None) -> TurnContext:
    """A turn's context for `text` alone, saved nowhere: what ranking reads of a turn (no earlier
    exchange, no conversation of its own), in the scope `view` (a project's, or none)."""
    project_id = view.project_id if view is not None else None
    conversation = Conversation(id=uuid.uuid4(), owner=user, project_id=project_id)
    return TurnContext(user=user, conversation=conversation, user_message=Message(content=text, user=user))


def search(*, user: User, text: str, limit: int, view: ScopeView | None = None) -> list[Memory]:
    """The memories a turn's block would hold for `text` in a chat of scope `view` (a project's, else
    outside projects): the relevant ones (most relevant first), then the always-used ones (pinned, keyed
    preferences), at most `limit`; [] while memory is off."""
    view = view or ScopeView()
    block = block_for_turn(query_context(user=user, text=text, view=view), candidates(user_id=user.pk, view=view))
    if block is None:
        return []
    ids = [c.id for c in block.background] + [c.id for c in block.serving]
    ids = ids[:limit]
    rows = {m.pk: m for m in memories_active(user_id=user.pk).filter(pk__in=ids)}
    return [rows[pk] for pk in ids if pk in rows]


ListScope = Literal["all", "user", "project"]


def listed(*, user: User, view: ScopeView | None, scope: ListScope = "all") -> QuerySet[Memory]:
    """Active memories, oldest first: with a project's `view` what a chat in it may use ("user": only the
    general ones among them, "project": only the project's); without one (None) every scope's ("user": the
    general ones, "project": every project's)."""
    rows = memories_active(user_id=user.pk)
    if view is not None:
        rows = memories_for_scope(user_id=user.pk, view=view)
    if scope == "user":
        return rows.filter(project__isnull=True)
    if scope == "project":
        return rows.filter(project__isnull=False)
    return rows


def visible(*, user: User, view: ScopeView | None, memory_id: int) -> Memory:
    """One memory the token may see (any status within its scope), else 404 like a missing one."""
    rows = Memory.objects.filter(owner=user)
    if view is not None:
        rows = rows.filter(scope_filter(view))
    found = rows.filter(pk=memory_id).first()
    if found is None:
        raise Http404("No Memory matches the given query.")
    return found


@dataclass(frozen=True)
class Proposal:
    memory: Memory
    saved: bool  # active at once (the token may write); else a suggestion waiting for Keep
    existing: bool = False  # the same sentence was already there: nothing new was written


def _guarded(content: object) -> str:
    """The judge's guards on a proposed sentence: refused as it would refuse an `add`."""
    text = memory_content_clean(content)
    text, problem = clean_content(text)
    if problem == CREDENTIAL:
        raise MemoryRejected(_("A credential or secret (password, PIN, code, key, card or ID number) is never stored."))
    if problem:
        raise MemoryRejected(
            _(
                "Memories are facts about you, not instructions: a permission or a rule for the assistant is "
                "never stored."
            )
        )
    return text


@transaction.atomic
def propose(*, user: User, content: object, client: str, save: bool, project_id: int | None = None) -> Proposal:
    """A tool's proposal: a suggestion with `client` as its source, or (with `save`) an active memory; in
    the project `project_id` (a project-limited token's), else about the user."""
    text = _guarded(content)
    _lock_user(user)
    active = memories_active(user_id=user.pk).filter(in_scope(project_id), content=text).first()
    if active is not None:
        return Proposal(active, saved=True, existing=True)
    waiting = memories_suggested(user_id=user.pk).filter(in_scope(project_id), content=text).first()
    if waiting is not None and not save:
        return Proposal(waiting, saved=False, existing=True)
    if save:
        _ensure_room(user=user)
        if waiting is not None:
            waiting.delete()  # the saved memory takes the suggestion's place
        embed_memories_later(user_id=user.pk)
    fields = {
        "owner": user,
        "content": text,
        "origin": Memory.Origin.CLIENT,
        "client": client[:100],
        "project_id": project_id,
    }
    try:
        with transaction.atomic():
            memory = Memory.objects.create(**fields, suggested=not save, sensitive=lexicon.is_sensitive(text))
    except IntegrityError:
        raise MemoryConflict(DUPLICATE) from None
    return Proposal(memory, saved=save)


def forget(*, user: User, memory: Memory) -> str:
    """An active memory goes to History ("retracted"); a waiting suggestion is discarded. Which it was."""
    if memory.suggested and memory.invalid_at is None:
        memory_delete(user=user, memory=memory)
        return "discarded"
    memory_retract(user=user, memory=memory)
    return "retracted"


def reads_record(*, user: User, token: ApiToken | None, client: str, kind: str, memory_ids: list[int]) -> None:
    """Log that `client`, through `token`, read these memories now, and count it as their last use."""
    if not memory_ids:
        return
    now = timezone.now()
    with transaction.atomic():
        owned = list(Memory.objects.filter(owner=user, pk__in=memory_ids).values_list("pk", flat=True))
        if not owned:
            return
        access = MemoryAccess.objects.create(
            user=user,
            token=token,
            token_label=(token.name or token.prefix) if token is not None else "",
            client=client[:100],
            kind=kind,
            at=now,
            count=len(owned),
        )
        MemoryRead.objects.bulk_create([MemoryRead(access=access, memory_id=pk) for pk in owned])
        Memory.objects.filter(pk__in=owned).update(last_used_at=now)


# --- what the pages and the API show ---------------------------------------------------------------


def accesses(*, user: User, limit: int = READS_SHOWN) -> list[MemoryAccess]:
    """The user's latest accesses by connected tools, newest first."""
    return list(MemoryAccess.objects.filter(user=user).order_by("-at", "-id")[:limit])


def reads_of_memory(*, memory: Memory, limit: int = READS_SHOWN) -> list[MemoryAccess]:
    """The latest accesses that read `memory`, newest first."""
    rows = MemoryAccess.objects.filter(reads__memory=memory).order_by("-at", "-id")
    return list(rows[:limit])


def with_last_read(rows: QuerySet[Memory]) -> QuerySet[Memory]:
    """`rows` with `last_read_client` and `last_read_at`: the latest tool read of each (two subqueries)."""
    latest = MemoryRead.objects.filter(memory=OuterRef("pk")).order_by("-access__at", "-access_id")
    return rows.annotate(
        last_read_client=Subquery(latest.values("access__client")[:1]),
        last_read_at=Subquery(latest.values("access__at")[:1]),
    )


def tokens_annotate(tokens: list[ApiToken]) -> None:
    """accounts.scopes token annotator: each token's latest reads (`reads`), in one query for the list."""
    if not tokens:
        return
    by_token: dict[int, list[MemoryAccess]] = {t.pk: [] for t in tokens}
    rows = MemoryAccess.objects.filter(token__in=[t.pk for t in tokens]).order_by("-at", "-id")
    for access in rows[: READS_SHOWN * len(tokens)]:
        shown = by_token[access.token_id]  # type: ignore[index]
        if len(shown) < READS_SHOWN:
            shown.append(access)
    for token in tokens:
        token.reads = [  # type: ignore[attr-defined]
            {"client": a.client, "kind": a.kind, "memories": a.count, "at": a.at} for a in by_token[token.pk]
        ]
