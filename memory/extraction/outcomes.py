"""What an extraction attempt ends in: the pipeline returns a Result; the retry policy (memory.extraction.retries),
the Celery task and the flush tool decide from it what happens next."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.changes import MemoryChange


class Outcome:
    """What happened, for the task (retry or not) and the flush tool (which sentence to return)."""

    APPLIED = "applied"  # a batch was judged and committed (possibly with no change)
    NOTHING_PENDING = "nothing_pending"
    BELOW_THRESHOLD = "below_threshold"
    BUSY = "busy"
    FAILED = "failed"  # attempts remain; the messages stay pending
    DROPPED = "dropped"  # the batch was skipped after MAX_ATTEMPTS failures
    ABANDONED = "abandoned"  # the claim was lost or the user changed memories meanwhile
    MEMORY_OFF = "memory_off"
    BACKING_OFF = "backing_off"  # the batch failed recently; no run was started (see `retry_in`)
    SPLIT = "split"  # too large for the model: retried at once as a smaller batch (internal to a run)
    WAITING = "waiting"  # a background run found the user still writing; a later task or the sweep runs it
    # The server timed out, refused the connection or answered 5xx: not the batch's fault, no attempt
    # counted; retried after `retry_in` (0: MEMORY_RETRY_HOURS have passed, left to the next trigger).
    UNAVAILABLE = "unavailable"


@dataclass
class Result:
    status: str
    run_ids: list[int] = field(default_factory=list)
    # What the committed batches changed, in the order they were applied.
    changes: list[MemoryChange] = field(default_factory=list)
    batches: int = 0
    attempt: int = 0
    error: str = ""
    # More pending messages up to the trigger than one batch holds.
    more: bool = False
    # BACKING_OFF, FAILED and UNAVAILABLE: seconds until the batch may be tried again.
    retry_in: float = 0.0

    def _count(self, kind: str) -> int:
        return sum(1 for change in self.changes if change.kind == kind)

    @property
    def added(self) -> int:
        return self._count("add")

    @property
    def updated(self) -> int:
        return self._count("update")

    @property
    def retracted(self) -> int:
        return self._count("retract")

    @property
    def cleared(self) -> bool:
        return self._count("clear") > 0

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def absorb(self, later: Result) -> Result:
        """Combine consecutive batches: changes add up, the status is the last batch's."""
        return Result(
            status=later.status,
            run_ids=[*self.run_ids, *later.run_ids],
            changes=[*self.changes, *later.changes],
            batches=self.batches + later.batches,
            attempt=later.attempt,
            error=later.error,
            more=later.more,
            retry_in=later.retry_in,
        )
