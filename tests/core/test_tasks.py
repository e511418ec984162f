"""core.tasks: the one way chat and memory send a Celery task."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from core.tasks import send_task, send_task_on_commit


class Recorded:
    """A task whose sends are recorded; with `down`, the broker refuses them."""

    def __init__(self, *, down: bool = False) -> None:
        self.down = down
        self.sent: list[dict[str, Any]] = []

    def apply_async(self, **options: Any) -> None:
        if self.down:
            raise ConnectionError("broker is down")
        self.sent.append(options)


def test_send_passes_the_arguments_and_the_retry_policy() -> None:
    task = Recorded()
    assert send_task(task, args=(1, 2), kwargs={"a": 3}, retry_policy={"max_retries": 2}, what="a test")
    assert task.sent == [
        {"args": (1, 2), "kwargs": {"a": 3}, "countdown": None, "retry": True, "retry_policy": {"max_retries": 2}}
    ]


def test_a_refused_send_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        assert not send_task(Recorded(down=True), args=(7,), what="memory extraction for user 7")
    assert "could not enqueue memory extraction for user 7" in caplog.text


@pytest.mark.django_db
def test_send_on_commit_waits_for_the_commit(django_capture_on_commit_callbacks: Any) -> None:
    task = Recorded()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        send_task_on_commit(task, args=(5,), what="a test")
        assert task.sent == []
    assert len(callbacks) == 1 and task.sent[0]["args"] == (5,)
