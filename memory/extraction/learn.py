"""Learning from messages that are not pending: the user's imported chats (the imports app).

    result, covered = learn(user_id=…, messages=[PendingMessage, …], attempt=1)

The same claim, judge, validation and commit as extraction (memory.extraction), with a run of trigger
`import`, and three differences that the commit applies for that trigger: no message is marked (imported
messages are never pending, so ordinary extraction never reads them), only `add`s are taken, and every
one waits as a suggestion with origin `imported` and the imported message as its source, whatever the
user's memory_review says. `covered` is how many of `messages`, from the first, the judge was shown and
the commit applied (the window may fit fewer than given); the caller moves its cursor past them.
"""

from __future__ import annotations

from memory.extraction import judge
from memory.extraction.batches import judge_in_pieces
from memory.extraction.claim import claim_release, claim_take
from memory.extraction.outcomes import Outcome, Result
from memory.models import ExtractionRun


def learn(*, user_id: int, messages: list[judge.PendingMessage], attempt: int = 1) -> tuple[Result, int]:
    if not messages:
        return Result(Outcome.NOTHING_PENDING), 0
    token = claim_take(user_id=user_id)
    if token is None:
        return Result(Outcome.BUSY), 0
    released = False
    try:
        result, run = judge_in_pieces(
            user_id=user_id,
            token=token,
            trigger=ExtractionRun.Trigger.IMPORT,
            up_to=None,
            pending=messages,
            attempt=attempt,
        )
        released = result.status in (Outcome.APPLIED, Outcome.DROPPED)
        covered = len(run.pending) if result.status in (Outcome.APPLIED, Outcome.DROPPED) else 0
        return result, covered
    finally:
        if not released:
            claim_release(user_id=user_id, token=token)
