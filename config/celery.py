"""Celery application; configuration lives in Django settings under the CELERY_ prefix."""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memora")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_without_secret_key(**kwargs: object) -> None:
    from config.security import require_secret_key

    require_secret_key()


def ensure_broker_dirs() -> None:
    """Create the filesystem transport's folders (settings does this at start-up; tests that point
    the transport elsewhere call it again)."""
    from pathlib import Path

    from django.conf import settings

    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if key in options:
            Path(str(options[key])).mkdir(parents=True, exist_ok=True)
