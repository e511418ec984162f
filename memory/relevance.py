"""Which of a user's memories bear on a text: the one ranking every reader goes through, a turn's block
(memory.context) and the judge's view of its batch (memory.pipeline.shown), so both rank alike.

The ranking itself is memory.recall (lexical, and by meaning where embeddings run); this module only
gathers what it needs: the turn's vectors on a turn's path (one embeddings request per turn), or one
request for the text elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from chat.extensions import TurnContext
from memory import embeddings
from memory.recall import Candidate, rank


def relevant(
    *,
    user_id: int,
    memories: Sequence[Candidate],
    message: str,
    previous: str = "",
    reply: str = "",
    turn: TurnContext | None = None,
) -> list[Candidate]:
    """The memories relevant to `message` (and the last exchange) that are not always used, most relevant
    first. `turn`: the turn being answered, whose embedding is made once for all its block's builds."""
    ids = [c.id for c in memories if not c.always]
    if turn is not None:
        query_vector, vectors = embeddings.for_turn(turn, ids)
    else:
        query_vector, vectors = embeddings.for_text(user_id=user_id, text=message, memory_ids=ids)
    return rank(
        memories,
        message=message,
        previous=previous,
        reply=reply,
        query_vector=query_vector,
        vectors=vectors,
        similarity_floor=settings.EMBEDDING_MIN_SIMILARITY,
        owner=user_id,
    )
