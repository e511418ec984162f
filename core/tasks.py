"""Sending a Celery task, the one way chat and memory do it: after the commit that makes its work visible
(`send_task_on_commit`; at once outside a transaction), and never failing the caller when the broker is away.
A refused send is logged ("could not enqueue …") and the work waits for what catches up: the worker's
sweep, or a later turn. Tasks are idempotent, so a send that did reach the broker twice is harmless."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from celery import Task
from django.db import transaction

logger = logging.getLogger(__name__)


def send_task(
    task: Task,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    countdown: float | None = None,
    retry_policy: Mapping[str, Any] | None = None,
    what: str,
) -> bool:
    """Send `task` now (`countdown` seconds later, if given; with `retry_policy`, the broker connection is
    retried that way first). False when the broker refused it: logged as "could not enqueue `what`"."""
    options: dict[str, Any] = {"countdown": countdown}
    if retry_policy is not None:
        options.update(retry=True, retry_policy=dict(retry_policy))
    try:
        task.apply_async(args=tuple(args), kwargs=dict(kwargs or {}), **options)
    except Exception:  # a broker outage must never break a turn or a write
        logger.exception("could not enqueue %s", what)
        return False
    return True


def send_task_on_commit(task: Task, **options: Any) -> None:
    """`send_task(task, **options)` once the current transaction commits (at once outside one): the worker
    sees what it commits."""
    transaction.on_commit(lambda: send_task(task, **options))
