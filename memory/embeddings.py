"""Embeddings for memory recall (optional: EMBEDDING_MODEL, SPEC §8 "Recall").

- A memory's vector is made when the memory is written, by the worker (`memory_vectors_make`, run by
  `memory.tasks.embed_memories_task`, sent by `embed_memories_later` after the commit that
  wrote it) — never on a turn's path. A row's
  content never changes, so an edit (a new row) gets a new vector; the vector goes with its memory
  (MemoryVector, on_delete=CASCADE).
- A turn makes exactly one embeddings request, for its own text, within EMBEDDING_TIMEOUT; on any
  failure or slowness it ranks lexically (`for_turn` answers None). The answer is kept for the turn's
  later builds of the block (after a tool ran), so they make no second request.

Vectors are stored normalised as packed float32 and compared by brute force: at ≤ 500 memories a user
that is a few milliseconds, far below what an index would save (README, "Recall").
"""

from __future__ import annotations

import logging
import math
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from threading import Lock

from django.conf import settings
from django.db import transaction

from chat.extensions import TurnContext
from chat.llm import LLMError, get_embedder
from memory import selectors
from memory.models import Memory, MemoryVector
from memory.selectors import memories_active

logger = logging.getLogger(__name__)

BATCH = 64  # texts per request when the worker embeds memories
_TURNS_KEPT = 256

# The query vector of recent turns, by user message id: None when the request failed.
_turn_vectors: OrderedDict[int, list[float] | None] = OrderedDict()
_turn_lock = Lock()


def enabled() -> bool:
    return bool(settings.EMBEDDING_MODEL)


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
    made = 0
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        vectors = embedder.embed(texts=[content for _, content in batch], timeout=float(settings.LLM_TIMEOUT))
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
    """Users with an active memory that has no vector for EMBEDDING_MODEL (the sweep's view)."""
    if not enabled():
        return []
    return selectors.users_missing_vectors(model=settings.EMBEDDING_MODEL, limit=limit)


# --- the turn ---------------------------------------------------------------------------------------


def _query_vector(ctx: TurnContext) -> list[float] | None:
    """The turn's own text embedded: one request per turn, whatever the number of block builds."""
    key = ctx.user_message.pk  # None: a text no turn saved (a connected tool's search), never kept
    with _turn_lock:
        if key is not None and key in _turn_vectors:
            return _turn_vectors[key]
    embedder = get_embedder()
    vector: list[float] | None = None
    if embedder is not None:
        try:
            vector = normalised(embedder.embed(texts=[ctx.user_message.content], timeout=settings.EMBEDDING_TIMEOUT)[0])
        except LLMError as exc:
            logger.warning("embeddings unavailable for this turn, ranking lexically: %s", exc)
    if key is None:
        return vector
    with _turn_lock:
        _turn_vectors[key] = vector
        while len(_turn_vectors) > _TURNS_KEPT:
            _turn_vectors.popitem(last=False)
    return vector


def for_turn(ctx: TurnContext, memory_ids: list[int]) -> tuple[list[float] | None, dict[int, Sequence[float]]]:
    """The turn's query vector and the vectors of the given memories, or (None, {}) without embeddings."""
    if not enabled() or not memory_ids:
        return None, {}
    # The user's vectors by owner (one indexed join, no list of hundreds of ids), kept for the given memories.
    wanted = set(memory_ids)
    stored = selectors.memory_vectors_of_user(user_id=ctx.user.pk, model=settings.EMBEDDING_MODEL)
    vectors: dict[int, Sequence[float]] = {
        pk: unpack(data) for pk, data in stored.values_list("memory_id", "vector") if pk in wanted
    }
    if not vectors:
        return None, {}  # nothing to compare with: no request
    return _query_vector(ctx), vectors


def for_text(
    *, user_id: int, text: str, memory_ids: list[int]
) -> tuple[list[float] | None, dict[int, Sequence[float]]]:
    """A text's vector and the given memories' vectors, off a turn's path (the judge's view of a batch):
    one request, not kept; (None, {}) without embeddings or when the request fails."""
    if not enabled() or not memory_ids or not text.strip():
        return None, {}
    wanted = set(memory_ids)
    stored = selectors.memory_vectors_of_user(user_id=user_id, model=settings.EMBEDDING_MODEL)
    vectors: dict[int, Sequence[float]] = {
        pk: unpack(data) for pk, data in stored.values_list("memory_id", "vector") if pk in wanted
    }
    embedder = get_embedder()
    if not vectors or embedder is None:
        return None, {}
    try:
        return normalised(embedder.embed(texts=[text], timeout=float(settings.LLM_TIMEOUT))[0]), vectors
    except LLMError as exc:
        logger.warning("embeddings unavailable, ranking lexically: %s", exc)
        return None, {}
