"""Celery application; configuration lives in Django settings under the CELERY_ prefix."""

import logging
import os
from typing import Any

from celery import Celery, bootsteps
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memora")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


class ExtractionSweep(bootsteps.StartStopStep):
    """Every worker sends the sweeps a second after it starts, then every MEMORY_SWEEP_SECONDS: the
    extraction sweep (memory/extraction/recovery.py) and the deletion of expired temporary chats (chat.tasks).

    A worker step rather than Celery beat: it needs no schedule file and no separate beat process to
    keep alive (or to forget), it runs as soon as a worker is back (which is when left-behind work can
    run again), and running it in several workers is harmless, the sweep and extraction being idempotent.
    """

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.entries: list[Any] = []

    def start(self, worker: Any) -> None:
        from django.conf import settings

        seconds = settings.MEMORY_SWEEP_SECONDS
        self.entries = [
            worker.timer.call_after(1.0, self.send),
            worker.timer.call_repeatedly(seconds, self.send),
        ]

    def stop(self, worker: Any) -> None:
        for entry in self.entries:
            entry.cancel()
        self.entries = []

    def send(self) -> None:
        from django.apps import apps

        from chat.tasks import sweep_temporary_conversations_task

        tasks = [sweep_temporary_conversations_task]  # temporary chats past CHAT_TEMPORARY_HOURS
        if apps.is_installed("memory"):
            from memory.tasks import sweep_extractions_task

            tasks.append(sweep_extractions_task)
        for task in tasks:
            try:
                task.apply_async(retry=False)
            except Exception as exc:  # the broker is away: the next tick tries again
                logger.warning("could not send the sweep %s: %s", task.name, exc)


app.steps["worker"].add(ExtractionSweep)


@worker_init.connect
def _refuse_without_secret_key(**kwargs: object) -> None:
    from core.security import require_secret_key

    require_secret_key()


def ensure_broker_dirs() -> None:
    """Create the filesystem transport's folders (settings does this at start-up; tests that point
    the transport elsewhere call it again)."""
    from pathlib import Path

    from django.conf import settings

    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if key in options:
            Path(str(options[key])).mkdir(parents=True, exist_ok=True)
