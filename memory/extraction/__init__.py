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
seam for time. Modules import what they use from each other directly; this package imports nothing.

Retries back off; the policy (attempt limit, backoff window, who may start within it) is
memory.extraction.retries, shared with the Celery task and the flush tool.
"""
