"""At most MEMORY_JUDGE_CONCURRENCY judge calls at once against one provider, across every process of
this machine (the web server's flushes and each Celery worker process alike).

A server people run themselves often has a single slot: while it answers a judge call, every user's
chat waits. Bounding judge calls leaves it free for chat most of the time; a background run that finds
every slot taken reports "busy" and its task tries again later, with nothing lost.

The slots are advisory file locks under var/ (`fcntl.flock`): the operating system releases them when a
process dies, so a crashed worker never holds one. Processes on other machines do not share them: run
one worker host per provider, or lower the worker's concurrency.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from django.conf import settings


def _slot_files() -> list[str]:
    provider = f"{settings.OPENAI_BASE_URL or 'default'}|{settings.MEMORY_MODEL}"
    key = hashlib.sha256(provider.encode()).hexdigest()[:16]
    count = max(1, int(settings.MEMORY_JUDGE_CONCURRENCY))
    return [str(settings.VAR_DIR / f"judge-slot-{key}-{n}.lock") for n in range(count)]


def _try(path: str) -> IO[str] | None:
    handle = open(path, "a")  # noqa: SIM115 (held open while the slot is ours)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


@contextmanager
def judge_slot(*, wait: float) -> Iterator[bool]:
    """Hold one judge slot for the block; yields False when none was free within `wait` seconds."""
    deadline = time.monotonic() + wait
    held: IO[str] | None = None
    while held is None:
        held = next((h for path in _slot_files() if (h := _try(path)) is not None), None)
        if held is None:
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(0.1)
    try:
        yield True
    finally:
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        held.close()
