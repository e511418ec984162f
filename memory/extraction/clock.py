"""The pipeline's clock: one seam, so tests can move time for claims, backoff windows and run records."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    """The current time; tests replace it (memory.extraction.clock.now)."""
    return timezone.now()
