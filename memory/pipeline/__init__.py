"""The extraction pipeline (SPEC §4): claim, load, judge, validate, commit — one user at a time.

    outcome = extract(user_id=..., trigger=ExtractionRun.Trigger.FLUSH, up_to_message_id=...)

Guarantees:
- At most one run per user: a claim row taken with a conditional UPDATE (or a primary-key guarded
  INSERT); a crashed run's claim expires after MEMORY_CLAIM_TTL_SECONDS.
- A run covers an exact list of message ids (recorded on the run) and, in the commit transaction,
  marks exactly those ids processed with `UPDATE … WHERE memory_status='pending'`. If any of them is
  no longer pending (the user edited or deleted memories meanwhile) or the claim was lost, nothing
  is applied. So no message is processed twice, none is skipped silently, and a message that
  arrives during a run simply waits for the next one.
- A failure (provider error, timeout, malformed answer) applies nothing and leaves the messages
  pending; the third failed attempt on the same batch marks it skipped and the run dropped.

The steps live in submodules: claim.py (the per-user claim), reads.py, batches.py (the batch loop),
runs.py (a run's record and how it ends), commit.py (the one transaction); clock.py is the tests'
seam for time. The public names are imported from here.

Retries back off; the policy (attempt limit, backoff window, who may start within it) is
memory.retries, shared with the Celery task and the flush tool.
"""

from memory.outcomes import Outcome, Result
from memory.pipeline.batches import extract, extraction_params
from memory.pipeline.claim import STALE_RUN_ERROR, claim_release, claim_take, claim_ttl
from memory.pipeline.reads import BATCH_SIZE, active_memories, pending_batch
from memory.pipeline.runs import dropped_batch_retry, judge_model_label
from memory.retries import MAX_ATTEMPTS, retry_delay

__all__ = [
    "BATCH_SIZE",
    "MAX_ATTEMPTS",
    "STALE_RUN_ERROR",
    "Outcome",
    "Result",
    "active_memories",
    "claim_release",
    "claim_take",
    "claim_ttl",
    "dropped_batch_retry",
    "extract",
    "extraction_params",
    "judge_model_label",
    "pending_batch",
    "retry_delay",
]
