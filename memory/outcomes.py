"""What an extraction attempt ends in: the pipeline returns a Result; the retry policy (memory.retries),
the Celery task and the flush tool decide from it what happens next."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass
class Result:
    status: str
    run_ids: list[int] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    retracted: int = 0
    cleared: bool = False
    batches: int = 0
    attempt: int = 0
    error: str = ""
    # More pending messages up to the trigger than one batch holds.
    more: bool = False
    # What changed, as short sentences ("Remembered: …", "Updated: …", "Forgot: …").
    summary: list[str] = field(default_factory=list)
    # BACKING_OFF, and FAILED: seconds until the batch may be tried again.
    retry_in: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.retracted or self.cleared)

    def absorb(self, later: Result) -> Result:
        """Combine consecutive batches: counts add up, the status is the last batch's."""
        return Result(
            status=later.status,
            run_ids=[*self.run_ids, *later.run_ids],
            added=self.added + later.added,
            updated=self.updated + later.updated,
            retracted=self.retracted + later.retracted,
            cleared=self.cleared or later.cleared,
            batches=self.batches + later.batches,
            attempt=later.attempt,
            error=later.error,
            more=later.more,
            summary=[*self.summary, *later.summary],
            retry_in=later.retry_in,
        )
