"""Rank a user's memories against a text: the one entry point for whatever needs "the memories relevant
to this" (a turn's block, the judge's batch, consolidation, search tools), so they all rank alike.

Ranking itself is memory.recall (pure, no database); this reads the vectors and embeds the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from memory import embeddings
from memory.recall import RECALL_MAX, Candidate, rank


def memories_relevant_to(
    *,
    user_id: int,
    text: str,
    memories: Sequence[Candidate],
    previous: str = "",
    reply: str = "",
    limit: int = RECALL_MAX,
    timeout: float | None = None,
) -> list[Candidate]:
    """Of `memories` (the user's, oldest first: `memory.context.candidates`), the ones relevant to `text`
    and not always used (pinned, keyed), most relevant first, at most `limit`. Blocking: embeds `text`
    within `timeout` seconds (default EMBEDDING_TIMEOUT) and ranks by words alone without embeddings."""
    vectors = embeddings.vectors_of_user(user_id=user_id, memory_ids=[m.id for m in memories])
    query_vector = None
    if vectors:
        query_vector = embeddings.embed_query(text, timeout=settings.EMBEDDING_TIMEOUT if timeout is None else timeout)
    meaning = embeddings.meaning(query_vector=query_vector, vectors=vectors)
    return rank(memories, message=text, previous=previous, reply=reply, meaning=meaning, limit=limit)
