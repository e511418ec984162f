"""Reads. Every query is scoped to one user; missing and not-yours are the same 404."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from django.db import connection, models
from django.db.models import F, Prefetch, Q, QuerySet, Value
from django.shortcuts import get_object_or_404
from django.utils import timezone

from accounts.models import User
from chat.models import Message
from core.sql import column, table
from memory.models import Memory, MemoryUse, MemoryVector

MemoryStatusFilter = Literal["active", "invalid", "suggested", "all"]
EXCERPT_CHARS = 200


# --- the two sets extraction revolves around ------------------------------------------------------


def user_memory_on(*, user_id: int) -> bool:
    """Whether the user has memory on: read when a run starts and again in its commit."""
    return User.objects.filter(pk=user_id, memory_enabled=True).exists()


def messages_pending_all_users(*, memory_on: bool = False) -> QuerySet[Message]:
    """Every user's messages still waiting for extraction: user role, `pending` (the sweep's view); with
    `memory_on`, only of users who have memory on."""
    query = Message.objects.filter(role=Message.Role.USER, memory_status=Message.MemoryStatus.PENDING)
    return query.filter(user__memory_enabled=True) if memory_on else query


def messages_pending(
    *, user_id: int, up_to_message_id: int | None = None, memory_on: bool = False
) -> QuerySet[Message]:
    """The user's messages still waiting for extraction, oldest first, optionally only up to a message."""
    query = messages_pending_all_users(memory_on=memory_on).filter(user_id=user_id)
    if up_to_message_id is not None:
        query = query.filter(id__lte=up_to_message_id)
    return query.order_by("id")


# The partial index of pending user messages (chat.models.Message), named to SQLite's planner.
PENDING_INDEX = "msg_user_pending"


def pending_count_up_to(*, user_id: int, message_id: int) -> int:
    """How many of the user's messages up to `message_id` wait for extraction, 0 while their memory is off:
    the post-turn hook's count, on every turn's path. Written in SQL so the role and status are literals
    that match the partial index `msg_user_pending`, named on SQLite: there the ORM's count (the values as
    parameters) took the user's foreign-key index and read every message they ever sent."""
    with connection.cursor() as cursor:
        cursor.execute(pending_count_sql(), [user_id, message_id])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def pending_count_sql() -> str:
    """`pending_count_up_to`'s statement (parameters: user id, message id)."""
    m, u = Message, User
    role, status = Message.Role.USER.value, Message.MemoryStatus.PENDING.value
    assert role.isalpha() and status.isalpha()  # literals in the statement, never input
    index = f" INDEXED BY {connection.ops.quote_name(PENDING_INDEX)}" if connection.vendor == "sqlite" else ""
    return (
        f"SELECT COUNT(*) FROM {table(m)} m{index}"
        f" INNER JOIN {table(u)} u ON u.{column(u, 'id')} = m.{column(m, 'user')}"
        f" WHERE m.{column(m, 'user')} = %s AND m.{column(m, 'id')} <= %s"
        f" AND m.{column(m, 'role')} = '{role}' AND m.{column(m, 'memory_status')} = '{status}'"
        f" AND u.{column(u, 'memory_enabled')}"
    )


def memories_active(*, user_id: int) -> QuerySet[Memory]:
    """The user's active memories, oldest first: not invalidated, not a suggestion waiting for the user,
    not past its end date (an expired memory leaves the block at once; the sweep moves it to history)."""
    return (
        Memory.objects.filter(owner_id=user_id, invalid_at__isnull=True, suggested=False)
        .exclude(expires_at__lte=timezone.now())
        .order_by("created_at", "id")
    )


def in_scope(project_id: int | None) -> Q:
    """Rows of exactly one scope: a project's, or (None) the user's own (memory.scopes says which a chat uses)."""
    return Q(project__isnull=True) if project_id is None else Q(project_id=project_id)


def memories_suggested(*, user_id: int) -> QuerySet[Memory]:
    """The user's suggestions waiting for Keep or Discard, newest first."""
    rows = Memory.objects.filter(owner_id=user_id, suggested=True, invalid_at__isnull=True).select_related("project")
    return rows.order_by("-created_at", "-id")


def memories_invalid(*, user_id: int) -> QuerySet[Memory]:
    """The user's history: invalidated memories, and ended ones the sweep has not moved yet."""
    ended = Q(invalid_at__isnull=True, suggested=False, expires_at__lte=timezone.now())
    return Memory.objects.filter(Q(owner_id=user_id) & (Q(invalid_at__isnull=False) | ended))


def memory_status(memory: Memory) -> str:
    """ "suggested", "invalid" (in history, or past its end date) or "active" (SPEC §8)."""
    if memory.suggested and memory.invalid_at is None:
        return "suggested"
    if memory.invalid_at is not None or (memory.expires_at is not None and memory.expires_at <= timezone.now()):
        return "invalid"
    return "active"


def _with_relations(query: QuerySet[Memory]) -> QuerySet[Memory]:
    """Sources (one extra query for the whole list) and the id of the version each row replaced."""
    sources = Message.objects.only("id", "conversation_id", "content", "created_at").order_by("id")
    return (
        query.annotate(supersedes_id=F("supersedes__id"), supersedes_content=F("supersedes__content"))
        .select_related("project")
        .prefetch_related(Prefetch("sources", queryset=sources))
    )


def memory_list(*, user: User, status: MemoryStatusFilter = "active") -> QuerySet[Memory]:
    """Active memories oldest first (the order the model sees them), history newest change first."""
    if status == "active":
        query = memories_active(user_id=user.pk)
    elif status == "invalid":
        query = memories_invalid(user_id=user.pk).order_by(F("invalid_at").desc(nulls_first=True), "-id")
    elif status == "suggested":
        query = memories_suggested(user_id=user.pk)
    else:
        query = Memory.objects.filter(owner=user).order_by("created_at", "id")
    return _with_relations(query)


def memory_suggestions_of_runs(*, run_ids: list[int]) -> list[Memory]:
    """The suggestions the given runs made that still wait, with the sentence each would replace."""
    if not run_ids:
        return []
    query = Memory.objects.filter(run_id__in=run_ids, suggested=True, invalid_at__isnull=True).order_by("id")
    return list(query.annotate(supersedes_content=F("supersedes__content")))


def memory_get_for_user(*, user: User, memory_id: int) -> Memory:
    return get_object_or_404(_with_relations(Memory.objects.filter(owner=user)), pk=memory_id)


def source_excerpt(message: Message) -> str:
    text = " ".join(message.content.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def memory_export(*, user: User) -> dict[str, Any]:
    """Everything remembered about the user, active and invalidated, with sources (schemas.MemoryExportOut)."""
    memories = list(memory_list(user=user, status="all"))
    return {
        "user": user.get_username(),
        "exported_at": timezone.now(),
        "memory_enabled": user.memory_enabled,
        "active": sum(1 for m in memories if memory_status(m) == "active"),
        "memories": memories,
    }


# --- the settings page and the "Memory updated" notice -------------------------------------------


def _matching(rows: QuerySet[Memory], query: str) -> QuerySet[Memory]:
    """Rows where every word of `query` is in the sentence or in a message it was learned from (the
    excerpt the row shows), so words found apart, or across a line break, still match."""
    for word in query.split():
        ids = rows.filter(Q(content__icontains=word) | Q(sources__content__icontains=word)).values("pk")
        rows = rows.filter(pk__in=ids)
    return rows


PageScope = int | Literal["user"] | None  # a project's id, the user's own, or every scope


def _of_scope(rows: QuerySet[Memory], scope: PageScope) -> QuerySet[Memory]:
    if scope is None:
        return rows
    return rows.filter(in_scope(None if scope == "user" else scope))


def memory_page_active(*, user: User, query: str = "", scope: PageScope = None) -> QuerySet[Memory]:
    """Active memories, pinned first (the ones every chat carries), then newest first (the settings page),
    optionally only those matching `query`, of one scope (SPEC §9)."""
    rows = _of_scope(_matching(memories_active(user_id=user.pk), query), scope)
    return _with_relations(rows.order_by("-pinned", "-created_at", "-id"))


def memory_has_history(*, user: User) -> bool:
    """Whether any invalidated memory is kept (the active list's empty state says where they are)."""
    return Memory.objects.filter(owner=user, invalid_at__isnull=False).exists()


def memory_history(*, user: User, query: str = "", scope: PageScope = None) -> QuerySet[Memory]:
    """Invalidated memories, newest change first, with the version that replaced each one;
    optionally only those matching `query`, of one scope."""
    rows = _of_scope(_matching(memory_list(user=user, status="invalid"), query), scope)
    return rows.select_related("superseded_by")


def memory_history_restorations(*, user: User, rows: list[Memory]) -> list[Memory]:
    """Set `restored_as` on each history row: the later version that restored its very wording (active
    or since invalidated too), or None. History says so instead of naming the version that once
    replaced it. One query for the user's version chains."""
    if not rows:
        return rows
    versions = {
        m.pk: m
        for m in Memory.objects.filter(owner=user).only("id", "content", "origin", "superseded_by_id", "invalid_at")
    }
    for row in rows:
        restored, seen, later = None, set(), row.superseded_by_id
        while later is not None and later not in seen and later in versions:
            seen.add(later)
            version = versions[later]
            if version.origin == Memory.Origin.RESTORED and version.content == row.content:
                restored = version
                break
            later = version.superseded_by_id
        row.restored_as = restored  # type: ignore[attr-defined]
    return rows


def memory_suggestions_waiting(*, user: User) -> list[Memory]:
    """The user's suggestions waiting for Keep or Discard, with the sentence each would replace and the
    messages each came from (one query for them all)."""
    return list(_with_relations(memories_suggested(user_id=user.pk)))


def memory_ids_existing(*, ids: set[int]) -> set[int]:
    """Which of these memory ids still exist (a memory deleted since a run committed does not)."""
    return set(Memory.objects.filter(pk__in=ids).values_list("pk", flat=True)) if ids else set()


# --- recall, the history search tool, forgetting -------------------------------------------------


def memory_history_for_search(*, user_id: int, since: datetime | None, until: datetime | None) -> QuerySet[Memory]:
    """The user's invalidated memories (never a suggestion) that ended from `since` on and began before
    `until`, newest end first (what the history search tool scans)."""
    history = Memory.objects.filter(owner_id=user_id, invalid_at__isnull=False, suggested=False)
    if since is not None:
        history = history.filter(invalid_at__gte=since)
    if until is not None:
        history = history.filter(created_at__lt=until)
    return history.order_by("-invalid_at", "-id")


# --- what a turn's memory block reads --------------------------------------------------------------
# In SQL rather than the ORM on purpose, like chat.limits.user_row: both run on every turn's way to its first
# token, and building the ORM's query cost more than running it (for 300 memories, 1.3 ms against 0.3 ms).
# tests/memory/test_recall_reads.py holds them to the ORM's `memories_active` and a plain ordered filter.


def _aware(value: datetime | None) -> datetime | None:
    """A datetime as the ORM gives it (SQLite's driver gives it naive, in UTC). Not timezone.make_aware: this
    runs twice per memory on every turn, and for UTC it does the same, several times slower."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


MemoryRow = tuple[int, str, bool, str, "datetime | None", "int | None", "datetime | None"]


def memory_rows_for_turn(*, user_id: int, project_id: int | None = None, with_user: bool = True) -> list[MemoryRow]:
    """(id, content, pinned, key, expires_at, project_id, created_at) of the memories `memories_active` gives,
    oldest first, while the user's memory is on (read here, not from a possibly stale user object), of one scope
    (memory.scopes.memories_for_scope, which tests hold this to): outside projects the user's; in a project its
    own, and with `with_user` (shared) the user's too but for the keys the project holds (its value wins)."""
    m, u = Memory, User
    expires, project, key = f"m.{column(m, 'expires_at')}", f"m.{column(m, 'project')}", f"m.{column(m, 'key')}"
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params: list[Any] = [user_id, now]
    if project_id is None:
        scope = f"{project} IS NULL"
    elif not with_user:
        scope, params = f"{project} = %s", [*params, project_id]
    else:
        p = "p"
        held = (
            f"SELECT 1 FROM {table(m)} {p} WHERE {p}.{column(m, 'project')} = %s AND {p}.{column(m, 'key')} = {key}"
            f" AND {p}.{column(m, 'invalid_at')} IS NULL AND NOT {p}.{column(m, 'suggested')}"
            f" AND ({p}.{column(m, 'expires_at')} IS NULL OR {p}.{column(m, 'expires_at')} > %s)"
        )
        scope = f"({project} = %s OR ({project} IS NULL AND ({key} = '' OR NOT EXISTS ({held}))))"
        params = [*params, project_id, project_id, now]
    sql = (
        f"SELECT m.{column(m, 'id')}, m.{column(m, 'content')}, m.{column(m, 'pinned')}, {key},"
        f" {expires}, {project}, m.{column(m, 'created_at')} FROM {table(m)} m"
        f" INNER JOIN {table(u)} u ON u.{column(u, 'id')} = m.{column(m, 'owner')}"
        f" WHERE m.{column(m, 'owner')} = %s AND m.{column(m, 'invalid_at')} IS NULL"
        f" AND NOT m.{column(m, 'suggested')} AND ({expires} IS NULL OR {expires} > %s)"
        f" AND u.{column(u, 'memory_enabled')} AND {scope}"
        f" ORDER BY m.{column(m, 'created_at')}, m.{column(m, 'id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # Both drivers give booleans; only the dates may need their time zone.
    return [(*row[:4], _aware(row[4]), row[5], _aware(row[6])) for row in rows]


def messages_last_two_before(*, conversation_id: Any, message_id: int) -> list[tuple[str, str]]:
    """The (role, content) of the conversation's two messages before `message_id`, newest first."""
    conversation = Message._meta.get_field("conversation")
    assert isinstance(conversation, models.Field)
    sql = (
        f"SELECT {column(Message, 'role')}, {column(Message, 'content')}"
        f" FROM {table(Message)}"
        f" WHERE {column(Message, 'conversation')} = %s AND {column(Message, 'id')} < %s"
        f" ORDER BY {column(Message, 'id')} DESC LIMIT 2"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [conversation.get_db_prep_value(conversation_id, connection), message_id])
        return [(role, content) for role, content in cursor.fetchall()]


def users_missing_vectors(*, model: str, limit: int) -> list[int]:
    """Users with an active memory that has no vector for `model`."""
    rows = Memory.objects.filter(invalid_at__isnull=True, suggested=False).exclude(vector__model=model)
    return list(rows.values_list("owner_id", flat=True).distinct()[:limit])


def memory_vectors_of_user(*, user_id: int, model: str) -> QuerySet[MemoryVector]:
    """The user's memory vectors for `model` (one indexed join by owner, no list of ids)."""
    return MemoryVector.objects.filter(memory__owner_id=user_id, model=model)


def memory_and_message_ids_alive(*, memory_ids: list[int], message_ids: list[int]) -> set[tuple[str, int]]:
    """Which of these memories and messages still exist, as ("memory", id) and ("message", id): one query."""
    memories = (
        Memory.objects.filter(pk__in=memory_ids).order_by().annotate(kind=Value("memory")).values_list("kind", "pk")
    )
    messages = (
        Message.objects.filter(pk__in=message_ids).order_by().annotate(kind=Value("message")).values_list("kind", "pk")
    )
    return set(memories.union(messages, all=True))


# --- what a reply used ---------------------------------------------------------------------------


def memory_uses_annotate(messages: list[Message]) -> None:
    """chat.extensions message annotator: on each assistant message, `memories_used` (ids) and
    `used_memories` (rows, for "Used N memories"), in one query. Only the message owner's memories count."""
    replies = {m.pk: m for m in messages if m.role == Message.Role.ASSISTANT}
    for message in replies.values():
        message.memories_used = []  # type: ignore[attr-defined]
        message.used_memories = []  # type: ignore[attr-defined]
    if not replies:
        return
    uses = (
        MemoryUse.objects.filter(message_id__in=list(replies), memory__owner_id=F("message__user_id"))
        .select_related("memory", "memory__project")
        .order_by("message_id", "-memory__pinned", "id")
    )
    for use in uses:
        message = replies[use.message_id]
        message.memories_used.append(use.memory_id)  # type: ignore[attr-defined]
        message.used_memories.append(use.memory)  # type: ignore[attr-defined]
