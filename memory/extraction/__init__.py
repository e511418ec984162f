"""Extraction: learning memories from the user's messages (SPEC §4), one user at a time.

How a run goes. A trigger asks for one: the post-turn hook (memory.receivers) and the worker's sweep
(`recovery.pending_work`) send a background task, the flush tool runs a flush in the turn, the admin
and `manage.py extract_memories` a manual one, "Learn from imported chats" an import (`learn`).
`batches.extract` derives the trigger's threshold and batch limit, checks that memory is on, that the
user has paused (`reads.quiet`) and is within their token quota, then for each batch: takes the user's
claim (`claim`), reads the oldest pending messages of one scope (`reads.pending_batch`) and the
batch's backoff (`retries`), and starts a `run.Run`, which fits the batch and the memories shown to
the judge (`shown`) into its window (`batching`) and records an `ExtractionRun`. The judge is asked
in the provider's queue (chat.model_queue) with the rendered request (`judge.request`, `judge.call`);
its answer is parsed strictly (`judge.answer`), and `commit` validates it against the memories as they
are now (`judge.validation`, `judge.content`) and applies it in one transaction that releases the
claim and marks exactly the batch's messages processed. Anything else ends the run through one method
of `Run` (too large: split; answer cut, malformed or failed: a counted attempt that backs off and, the
third time, drops the batch; server unavailable: waited for, not counted; queue full or claim lost:
abandoned), and `Run.finish` closes the record, scrubbing what was deleted meanwhile. What happens next
is decided from the `outcomes.Result` by `retries` (the task's countdown, the flush's follow-up).
Records past their retention lose their text (`retention`); a dead worker's claim is released and
overdue work sent again by the sweep (`recovery`).

Where a run's state lives:
- in the database: each message's `memory_status` (pending → processed or skipped); the per-user
  claim (`MemoryClaim`: token, expiry, the run it serves, the process holding it); the run's record
  (`ExtractionRun`: trigger, attempt, message ids, first and trigger message, model, the judge's input
  masked and its answer, applied and dropped operations, error, timings, `text_removed_at`); the
  memories and their sources the commit writes (`Memory`, `MemorySource`); the user's `memory_enabled`
  and `memory_review`, read at start and at commit; the provider queue's ticket (`ProviderTicket`);
  the judge call's usage (the usage app);
- on the broker: the background task's message and its scheduled retries (memory.tasks);
- in this process: the `Run` of the batch being judged (its messages, the message numbers shown to
  the judge, the request's size, the memories shown); the `Result` summed over a call's batches; the
  judge prompt and answer schema read once (`judge.request.judge_prompt`, `judge.call.answer_schema`);
  the recent turns' query vectors that rank the memories shown (memory.embeddings); what a flush told
  its turn it learned, by user message id, so the turn's save can drop what was deleted meanwhile
  (memory.forgetting.turn_memories_note); the server's
  context window and token calibration (chat.llm.server_facts, in Django's cache); `clock`, the tests'
  seam for time.

Modules import what they use from each other directly; this package imports nothing.
"""
