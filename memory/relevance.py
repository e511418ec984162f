"""Which of a user's memories bear on a text: the one ranking every reader goes through — a turn's block
(memory.context), the judge's view of its batch (memory.extraction.shown), connected tools' search — so
they all rank alike.

The ranking itself is memory.recall (by words, and by meaning where embeddings run: SPEC §9, calibrated
to the user's own memories); this module only gathers what it needs: the turn's vector on a turn's path
(one embedding per turn), or one for the text elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from chat.extensions import TurnContext
from memory import embeddings
from memory.recall import RECALL_MAX, Candidate, rank


def relevant(
    *,
    user_id: int,
    memories: Sequence[Candidate],
    message: str,
    previous: str = "",
    reply: str = "",
    turn: TurnContext | None = None,
    limit: int = RECALL_MAX,
) -> list[Candidate]:
    """Of `memories` (the user's, oldest first: `memory.context.candidates`), the ones relevant to `message`
    (and the last exchange) that are not always used, most relevant first, at most `limit`. `turn`: the turn
    being answered, whose embedding is made once for all its block's builds (within EMBEDDING_TIMEOUT);
    otherwise `message` is embedded here (blocking, within LLM_TIMEOUT). Without embeddings: by words."""
    ids = [c.id for c in memories]  # the always-used ones too: the user's own distribution of similarity
    if turn is not None:
        meaning = embeddings.for_turn(turn, ids)
    else:
        meaning = embeddings.for_text(user_id=user_id, text=message, memory_ids=ids)
    return rank(memories, message=message, previous=previous, reply=reply, meaning=meaning, owner=user_id, limit=limit)
