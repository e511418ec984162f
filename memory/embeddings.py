"""Embeddings for memory recall (EMBEDDING_MODEL, SPEC §8 "Recall", §9 "Recall by meaning"): by default
the embedded model (chat.llm.local_embedder), "off" for none, or a named model at an endpoint.

- A memory's vector is made when the memory is written, by the worker (`memory_vectors_make`, run by
  `memory.tasks.embed_memories_task`, sent by `embed_memories_later` after the commit that
  wrote it) — never on a turn's path. A row's
  content never changes, so an edit (a new row) gets a new vector; the vector goes with its memory
  (MemoryVector, on_delete=CASCADE).
- A turn makes at most one embeddings request, for its own text, started as the turn starts (`prefetch`)
  and waited for within EMBEDDING_TIMEOUT; on any failure or slowness it ranks lexically (`for_turn`
  answers None). The answer is kept for the turn's later builds of the block (after a tool ran), so they
  make no second request, and by its text for later turns with the same words.
- Similarity is judged against the user's own memories and a few reference memories of no one in
  particular (`REFERENCE`, memory.recall.Meaning); their vectors are made once per process, off any
  turn's path (until they are, a turn ranks with the user's memories alone).

Vectors are stored normalised as packed float32 and compared by brute force: at ≤ 500 memories a user
that is a few milliseconds, far below what an index would save (docs/recall.md).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from threading import Lock
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.db import transaction
from django.dispatch import receiver

from chat.extensions import TurnContext
from chat.llm import EMBEDDING_SETTINGS, Embedder, LLMError, get_embedder, metering
from memory import selectors
from memory.models import Memory, MemoryVector
from memory.recall import Meaning, is_about_something
from memory.selectors import memories_active

logger = logging.getLogger(__name__)

BATCH = 64  # texts per request when the worker embeds memories
_TURNS_KEPT = 256

# The query vector of recent turns, by user message id: None when the request failed.
_turn_vectors: OrderedDict[int, list[float] | None] = OrderedDict()
_turn_lock = Lock()


# Memories of no one in particular, English and Chinese, that keep the similarity measure steady for a
# user with few memories (memory.recall.Meaning).
REFERENCE = (
    "Lives in a small town near the coast.",
    "Works night shifts at a hospital.",
    "Has two older brothers.",
    "Prefers tea to coffee in the morning.",
    "Is learning to play the guitar.",
    "Drives a ten-year-old hatchback.",
    "Likes science fiction novels.",
    "Goes swimming on Sunday mornings.",
    "Is renovating the kitchen this year.",
    "Uses a Mac for work.",
    "Volunteers at an animal shelter.",
    "Speaks Spanish at home.",
    "Takes the train to the office.",
    "Has a vegetable allotment.",
    "Is planning a trip to Canada next summer.",
    "Prefers emails to phone calls.",
    "住在北京海淀区。",
    "在一家银行做会计。",
    "周末喜欢去钓鱼。",
    "女儿在上幼儿园。",
    "每天早上跑步五公里。",
    "喜欢看历史类的纪录片。",
    "正在学习弹钢琴。",
    "对海鲜过敏。",
    "家里养了两只猫。",
    "明年打算去日本旅游。",
    "习惯用微信支付。",
    "喜欢吃甜食。",
    "每天坐公交上班。",
    "最近在学做饭。",
    "喜欢听古典音乐。",
    "买了一台新的笔记本电脑。",
)

_reference_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder-reference")
_reference: dict[str, Future[list[list[float]]]] = {}
_reference_lock = Lock()


def enabled() -> bool:
    return get_embedder() is not None


def active_model() -> str:
    """The name vectors are stored under for the embeddings in use, "" without embeddings."""
    embedder = get_embedder()
    return embedder.model if embedder is not None else ""


def normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0 for _ in vector]


def pack(vector: Sequence[float]) -> bytes:
    return array("f", normalised(vector)).tobytes()


def unpack(data: bytes | memoryview) -> array[float]:
    values = array("f")
    values.frombytes(bytes(data))
    return values


# --- written with the memory (the worker) ----------------------------------------------------------


def memory_vectors_make(*, user_id: int) -> int:
    """Embed the user's active memories that have no vector for EMBEDDING_MODEL; how many were made.
    Idempotent; a memory deleted meanwhile gets none."""
    embedder = get_embedder()
    if embedder is None:
        return 0
    missing = list(memories_active(user_id=user_id).exclude(vector__model=embedder.model).values_list("pk", "content"))
    # Not a turn's path: made (or found) here, they are ready when this process ranks (the judge's batch).
    reference_vectors(embedder, wait=float(settings.LLM_TIMEOUT))
    made = 0
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        with metering.counting() as calls:
            vectors = embedder.embed(texts=[content for _, content in batch], timeout=float(settings.LLM_TIMEOUT))
        metering.report(user_id=user_id, project_id=None, kind="embedding", calls=calls)
        with transaction.atomic():
            alive = set(Memory.objects.filter(pk__in=[pk for pk, _ in batch]).values_list("pk", flat=True))
            for (pk, _), vector in zip(batch, vectors, strict=True):
                if pk in alive:
                    MemoryVector.objects.update_or_create(
                        memory_id=pk, defaults={"model": embedder.model, "vector": pack(vector)}
                    )
                    made += 1
    return made


def users_missing_vectors(limit: int = 100) -> list[int]:
    """Users with an active memory that has no vector for the embeddings in use (the sweep's view: it
    embeds existing users' memories when embeddings are first used, or the model changes)."""
    model = active_model()
    if not model:
        return []
    return selectors.users_missing_vectors(model=model, limit=limit)


def reference_vectors(embedder: Embedder, *, wait: float = 0.0) -> list[list[float]] | None:
    """The vectors of `REFERENCE` for this embedder, or None while they are being made (the first call
    starts making them on a thread of their own; `wait`: seconds to wait for them). A failure is retried at
    the next call."""
    with _reference_lock:
        future = _reference.get(embedder.model)
        if future is None or (future.done() and future.exception() is not None):
            future = _reference_pool.submit(_embed_reference, embedder)
            _reference[embedder.model] = future
    try:
        return future.result(timeout=wait) if wait or future.done() else None
    except Exception:  # TimeoutError while waiting, or the request failed (retried next time)
        return None


def warm_up() -> threading.Thread:
    """Load the embeddings and make the reference vectors on a thread of their own, so a server's first
    turns are calibrated (config/asgi.py calls it as a server process starts; nothing waits for it)."""

    def warm() -> None:
        embedder = get_embedder()
        if embedder is not None:
            reference_vectors(embedder, wait=float(settings.LLM_TIMEOUT))

    thread = threading.Thread(target=warm, name="embedder-warm-up", daemon=True)
    thread.start()
    return thread


def _embed_reference(embedder: Embedder) -> list[list[float]]:
    return [normalised(v) for v in embedder.embed(texts=list(REFERENCE), timeout=float(settings.LLM_TIMEOUT))]


def embed_query(text: str, *, timeout: float) -> list[float] | None:
    """`text` embedded as a message to find memories for, or None (no embeddings, a failure, too slow)."""
    embedder = get_embedder()
    if embedder is None:
        return None
    try:
        return normalised(embedder.embed(texts=[text], timeout=timeout, query=True)[0])
    except LLMError as exc:
        logger.warning("embeddings unavailable, ranking by words: %s", exc)
        return None


def vectors_of_user(*, user_id: int, memory_ids: Sequence[int]) -> dict[int, Sequence[float]]:
    """The stored vectors of the given memories of the user for the embeddings in use: one query."""
    model = active_model()
    if not model or not memory_ids:
        return {}
    wanted = set(memory_ids)
    stored = selectors.memory_vectors_of_user(user_id=user_id, model=model)
    return {pk: unpack(data) for pk, data in stored.values_list("memory_id", "vector") if pk in wanted}


def meaning(*, query_vector: Sequence[float] | None, vectors: dict[int, Sequence[float]]) -> Meaning | None:
    """The calibrated closeness of a message to these memories (memory.recall.Meaning), or None."""
    embedder = get_embedder()
    if query_vector is None or not vectors or embedder is None:
        return None
    return Meaning(query_vector, vectors, reference_vectors(embedder) or ())


# --- the turn ---------------------------------------------------------------------------------------
#
# A message's vector is asked for as its turn is about to start (`prefetch`, chat.extensions.turn_prefetch),
# so the embedding runs while the turn's start is saved; the block then waits for what is left of it, never
# more than EMBEDDING_TIMEOUT after it was asked for. Vectors are kept by the message's text (whitespace
# aside) for the next turn that sends the same words (a retry, "ok", a repeated question).


class _Pending:
    """One text's query embedding, asked for at `started` (time.monotonic) on the prefetch pool; the calls
    it made, counted once, by the turn that first uses it."""

    def __init__(self, future: Future[list[float] | None], calls: list[metering.Call]) -> None:
        self.future = future
        self.calls = calls
        self.started = time.monotonic()
        self.counted = False


_QUERIES_KEPT = 512
# A turn's message is embedded up to this many characters: the model's time grows with the text (a pasted
# page costs far more than a question), and what a message is about is mostly said early; its words all
# count in the lexical ranking.
QUERY_MAX_CHARS = 300
_queries: OrderedDict[str, _Pending] = OrderedDict()
_queries_lock = Lock()
# Two threads: one waits for the embedder (which queues the texts on its own thread), one spare for a slow one.
_prefetch_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="embedder-query")
# Users whose last turn had vectors to compare with: only their turns are embedded ahead (others may
# have no memories, and their turns need no vector).
_users_with_vectors: OrderedDict[int, None] = OrderedDict()


def _text_key(text: str) -> str:
    return " ".join(text.split())


def _failed(future: Future[list[float] | None]) -> bool:
    return future.done() and (future.exception() is not None or future.result() is None)


@receiver(setting_changed)
def _embeddings_changed(*, setting: str, **kwargs: Any) -> None:
    """Vectors of another model are no use: forget the kept ones (tests switch models)."""
    if setting in EMBEDDING_SETTINGS:
        with _queries_lock:
            _queries.clear()
            _users_with_vectors.clear()
        with _turn_lock:
            _turn_vectors.clear()


def _embed_counted(text: str, calls: list[metering.Call]) -> list[float] | None:
    with metering.counting(calls):
        return embed_query(text[:QUERY_MAX_CHARS], timeout=settings.EMBEDDING_TIMEOUT)


def _pending(text: str) -> _Pending:
    """The query embedding of `text`: the one kept or under way, else a new one, started now. A failed one
    is not kept: the next turn with these words asks again."""
    key = _text_key(text)
    with _queries_lock:
        pending = _queries.get(key)
        if pending is not None and not _failed(pending.future):
            _queries.move_to_end(key)
            return pending
        calls: list[metering.Call] = []
        pending = _Pending(_prefetch_pool.submit(_embed_counted, text, calls), calls)
        _queries[key] = pending
        while len(_queries) > _QUERIES_KEPT:
            _queries.popitem(last=False)
        return pending


def prefetch(user_id: int, text: str) -> None:
    """Start embedding a turn's message before the turn starts (chat.extensions.turn_prefetch): for a user
    whose last turn had vectors to compare with, and a message about something. Returns at once."""
    if user_id in _users_with_vectors and is_about_something(text):
        _pending(text)


def _query_vector(ctx: TurnContext) -> list[float] | None:
    """The turn's own text embedded: asked for once per turn, whatever the number of block builds, and
    waited for at most EMBEDDING_TIMEOUT after it was asked for (else None: the turn ranks by words)."""
    key = ctx.user_message.pk  # None: a text no turn saved (a connected tool's search), never kept
    with _turn_lock:
        if key is not None and key in _turn_vectors:
            return _turn_vectors[key]
    pending = _pending(ctx.user_message.content)
    wait = max(0.0, pending.started + settings.EMBEDDING_TIMEOUT - time.monotonic())
    try:
        vector = pending.future.result(timeout=wait)
    except FutureTimeout:
        logger.warning("embeddings unavailable, ranking by words: no vector within %g s", settings.EMBEDDING_TIMEOUT)
        vector = None
    except Exception:  # embed_query logs what it expects; anything else is logged here, never raised
        logger.exception("the query embedding failed; ranking by words")
        vector = None
    with _queries_lock:
        first, pending.counted = not pending.counted, True
    if first and vector is not None:
        metering.note_made(pending.calls)  # reported with the turn that asked for it (chat.turn.metered)
    if key is None:
        return vector
    with _turn_lock:
        _turn_vectors[key] = vector
        while len(_turn_vectors) > _TURNS_KEPT:
            _turn_vectors.popitem(last=False)
    return vector


def for_turn(ctx: TurnContext, memory_ids: list[int]) -> Meaning | None:
    """The turn's closeness in meaning to the given memories (all of the user's that it may use), or None
    without embeddings or vectors, or for a message about nothing (a greeting: ranking ignores meaning there)."""
    if not memory_ids or not enabled() or not is_about_something(ctx.user_message.content):
        return None
    # The user's vectors by owner (one indexed join, no list of hundreds of ids), kept for the given memories.
    vectors = vectors_of_user(user_id=ctx.user.pk, memory_ids=memory_ids)
    if not vectors:
        return None  # nothing to compare with: no request
    with _queries_lock:
        _users_with_vectors[ctx.user.pk] = None
        _users_with_vectors.move_to_end(ctx.user.pk)
        while len(_users_with_vectors) > _TURNS_KEPT * 16:
            _users_with_vectors.popitem(last=False)
    return meaning(query_vector=_query_vector(ctx), vectors=vectors)


def for_text(*, user_id: int, text: str, memory_ids: list[int]) -> Meaning | None:
    """A text's closeness in meaning to the given memories, off a turn's path (the judge's view of a batch):
    one request within LLM_TIMEOUT, not kept; None without embeddings or when the request fails."""
    if not memory_ids or not text.strip() or not enabled():
        return None
    vectors = vectors_of_user(user_id=user_id, memory_ids=memory_ids)
    if not vectors:
        return None
    with metering.counting() as calls:
        query_vector = embed_query(text, timeout=float(settings.LLM_TIMEOUT))
    metering.report(user_id=user_id, project_id=None, kind="embedding", calls=calls)
    return meaning(query_vector=query_vector, vectors=vectors)
