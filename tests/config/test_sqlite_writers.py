"""The embedded database's writers queue in order within a process (config/sqlite3/base.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from accounts.models import User
from config.sqlite3 import base as sqlite_writers

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _sqlite_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the embedded database only")


def test_a_write_transaction_holds_the_writer_lock_until_it_ends_either_way() -> None:
    with transaction.atomic():
        User.objects.create_user("first")
        assert sqlite_writers._writer.locked()
    assert not sqlite_writers._writer.locked()
    with pytest.raises(RuntimeError), transaction.atomic():
        User.objects.create_user("second")
        raise RuntimeError("rolled back")
    assert not sqlite_writers._writer.locked()
    assert list(User.objects.values_list("username", flat=True)) == ["first"]


def test_writers_of_many_threads_all_commit_in_turn() -> None:
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(5):
                with transaction.atomic():
                    User.objects.create_user(f"writer-{n}-{i}")
                    time.sleep(0.002)  # hold the write a little, as a turn's start does
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert User.objects.filter(username__startswith="writer-").count() == 60
    assert not sqlite_writers._writer.locked()
