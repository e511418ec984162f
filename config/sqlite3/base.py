"""Django's SQLite backend, with the write transactions of one process taking turns.

SQLite has one writer at a time. A writer that finds the database locked sleeps in SQLite's busy
handler (1, 2, 5 … up to 100 ms at a time) and tries again, so when many threads write at once (fifty
replies starting together, each saving its text every second) some wait far longer than their turn.
Here the writers of a process queue on a lock before BEGIN IMMEDIATE and go in order; only another
process (the Celery worker) still meets the busy handler. The wait for the lock is bounded: past
WAIT_SECONDS a writer goes on without it and SQLite's own busy timeout applies, as before.
"""

from __future__ import annotations

import threading

from django.db.backends.sqlite3 import base

WAIT_SECONDS = 5.0
_writer = threading.Lock()


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_writer = False

    def _start_transaction_under_autocommit(self) -> None:
        self._holds_writer = _writer.acquire(timeout=WAIT_SECONDS)
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release_writer()
            raise

    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            _writer.release()

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            self._release_writer()
