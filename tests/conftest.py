"""Fixtures for the test suite beyond the project-wide ones in the top-level conftest.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAIServer

# What a parallel worker's input (pytest-xdist) names: the copy of the migrated test database it tests on.
WORKER_DATABASE = "memora_test_database"
# The controlling process's migrated database (`template`, its name before) and the copies it made.
_parallel_databases: dict[str, Any] = {}


def _sqlite(database: Mapping[str, Any]) -> bool:
    return bool(database["ENGINE"] == "django.db.backends.sqlite3")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """In parallel runs (pytest-xdist), the controlling process migrates one test database, before the
    first worker starts, and gives each worker a copy of it (a file copy on SQLite, CREATE DATABASE …
    TEMPLATE on PostgreSQL): a migration costs seconds of processor time, which N workers paid N times."""
    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    with node.config.stash[blocking_manager_key].unblock():
        if not _parallel_databases:
            if _sqlite(connection.settings_dict):
                folder = _parallel_databases["folder"] = Path(tempfile.mkdtemp(prefix="memora-test-databases-"))
                connection.settings_dict.setdefault("TEST", {})["NAME"] = str(folder / "test.sqlite3")
            _parallel_databases["before"] = connection.settings_dict["NAME"]
            connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
            _parallel_databases["copies"] = []
        connection.close()  # no session may stay open on a template (PostgreSQL), or a WAL unwritten (SQLite)
        worker = node.gateway.id
        connection.creation.clone_test_db(suffix=worker, verbosity=0, autoclobber=True)
        _parallel_databases["copies"].append(worker)
        node.workerinput[WORKER_DATABASE] = connection.creation.get_test_db_clone_settings(worker)["NAME"]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controlling process of a parallel run drops the database and copies it made."""
    if not _parallel_databases:
        return
    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    with config.stash[blocking_manager_key].unblock():
        for worker in _parallel_databases.pop("copies", []):
            connection.creation.destroy_test_db(None, verbosity=0, suffix=worker)
        connection.creation.destroy_test_db(_parallel_databases.pop("before"), verbosity=0)
    if "folder" in _parallel_databases:
        shutil.rmtree(_parallel_databases.pop("folder"), ignore_errors=True)


@pytest.fixture(scope="session")
def django_db_keepdb(request: pytest.FixtureRequest) -> bool:
    """A parallel worker's database is a migrated copy that the controlling process made, and drops."""
    workerinput = getattr(request.config, "workerinput", {})
    return bool(request.config.getvalue("reuse_db")) or WORKER_DATABASE in workerinput


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest,
    django_db_modify_db_settings_parallel_suffix: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """On SQLite, test on a file (one per test run) rather than pytest-django's shared in-memory database;
    a parallel worker tests on the copy it was given (pytest_configure_node).

    Threads share an in-memory database through SQLite's shared cache, whose table locks fail at once
    ("database table is locked") instead of waiting; a file in WAL mode with a busy timeout behaves like
    production when a tool, a worker thread or two turns write at the same time.
    """
    from django.conf import settings

    database = settings.DATABASES["default"]
    copy = getattr(request.config, "workerinput", {}).get(WORKER_DATABASE)
    if copy:
        database.setdefault("TEST", {})["NAME"] = copy
    elif _sqlite(database):
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture
def counted_redis() -> Iterator[str]:
    """The URL of a redis-server of the test's own, for tests that count the connections a server received:
    on the suite's Redis, tests running beside them in other workers would open some too."""
    from tests.processes import PrivateRedis

    redis = PrivateRedis()
    redis()
    yield redis.url
    redis.close()


@pytest.fixture
def conversation(user: Any) -> Any:
    """A conversation of `user`'s, created as the app creates one: untitled, with its agent state."""
    from chat.services import conversation_create

    return conversation_create(user=user)


@pytest.fixture
def fake_openai(settings: Any) -> Iterator[FakeOpenAIServer]:
    """A local OpenAI-compatible server, with the settings pointing the `openai` backend at it."""
    server = FakeOpenAIServer().start()
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT = 2.0
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def turn_hook_calls() -> Iterator[list[dict[str, Any]]]:
    """The keyword arguments of every `chat.extensions.turn_finished` signal sent during the test."""
    from chat.extensions import turn_finished

    calls: list[dict[str, Any]] = []

    def receiver(sender: object, **kwargs: Any) -> None:
        kwargs.pop("signal", None)
        calls.append(kwargs)

    turn_finished.connect(receiver, dispatch_uid="tests-turn-hook-calls")
    yield calls
    turn_finished.disconnect(dispatch_uid="tests-turn-hook-calls")


@pytest.fixture
def register_tool() -> Iterator[Callable[[Any], Any]]:
    """Register chat tools for one test; the registry is restored afterwards."""
    from chat import extensions

    saved = dict(extensions._tools)

    def register(tool: Any) -> Any:
        extensions.register_tool(tool)
        return tool

    yield register
    extensions._tools.clear()
    extensions._tools.update(saved)


@pytest.fixture
def register_provider() -> Iterator[Callable[[str, Any], None]]:
    """Register context providers for one test; the registry is restored afterwards."""
    from chat import extensions

    saved = dict(extensions._context_providers)
    yield extensions.register_context_provider
    extensions._context_providers.clear()
    extensions._context_providers.update(saved)
