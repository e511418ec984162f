"""Fixtures for the test suite beyond the project-wide ones in the top-level conftest.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """On SQLite, test on a file (one per test run) rather than pytest-django's shared in-memory database.

    Threads share an in-memory database through SQLite's shared cache, whose table locks fail at once
    ("database table is locked") instead of waiting; a file in WAL mode with a busy timeout behaves like
    production when a tool, a worker thread or two turns write at the same time.
    """
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


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
