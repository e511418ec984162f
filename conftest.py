"""Shared test set-up: service-dependent markers, the fake model, users and API clients."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

BROWSER = os.environ.get("MEMORA_BROWSER_TESTS", "") == "1"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings
    from django.db import connection

    reasons = {
        "postgres": None if connection.vendor == "postgresql" else "runs in the PostgreSQL pass (DATABASE_URL)",
        "redis": None if settings.REDIS_URL else "runs in the Redis pass (REDIS_URL)",
        "browser": None if BROWSER else "needs Chromium (MEMORA_BROWSER_TESTS=1)",
    }
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
    # Browser tests last: Playwright's sync API keeps an event loop running in the main thread for
    # as long as its session-scoped browser lives, which async tests after it cannot share.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
    # Under pytest 9 every operation's test that schemathesis generates has the function's id alone
    # (`…::test_x`, its name being `test_x[GET /api/me]`), and parallel workers know a test by its id:
    # they would run one of them. Each gets its operation in its id, as a parametrized test would.
    for item in items:
        node_id = getattr(item, "_id", None)
        original = getattr(item, "originalname", "")
        if node_id is not None and node_id.params is None and item.name.startswith(f"{original}["):
            item._id = node_id.with_params(item.name[len(original) + 1 : -1])
    # In parallel runs (`--dist loadgroup`), a browser test module goes to one worker: its servers, started
    # once per module, are not started again in every worker that takes one of its tests.
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# What Django's migrations write once and no test changes: a transactional test's flush leaves these rows.
KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


@pytest.fixture(scope="session", autouse=True)
def _quick_flush() -> None:
    """After a transactional test Django empties every table (`flush`), then writes the content types and
    permissions again (its post_migrate signal: a query or more per app). That cost a third of a second a
    test on PostgreSQL, where the flush is also one TRUNCATE of some sixty tables, which makes new files
    for each. Here the flush leaves the content types and permissions as migrations wrote them (so nothing
    needs writing again) and, on PostgreSQL, empties the other tables with DELETE, milliseconds for a
    test's few rows. The tables end as empty as before. Order does not matter: Django's foreign keys are
    checked at commit (DEFERRABLE INITIALLY DEFERRED) and a flush runs in one transaction. A flush that
    resets sequences is Django's own."""
    from django.core.management.commands import flush
    from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQL
    from django.db.backends.sqlite3.base import DatabaseWrapper as SQLite

    emptied_all: list[bool] = [False]  # whether the last flush emptied the kept tables too (Django's own)

    def keeping(sql_flush: Any, *, delete: bool) -> Any:
        def flush_sql(
            self: Any, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
        ) -> list[str]:
            emptied_all[0] = reset_sequences
            if reset_sequences:
                return list(sql_flush(self, style, tables, reset_sequences=True, allow_cascade=allow_cascade))
            tables = [table for table in tables if table not in KEPT_BY_FLUSH]
            if delete and tables:
                return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(t))};" for t in tables]
            return list(sql_flush(self, style, tables, reset_sequences=False, allow_cascade=allow_cascade))

        return flush_sql

    for wrapper, delete in ((PostgreSQL, True), (SQLite, False)):
        wrapper.ops_class.sql_flush = keeping(wrapper.ops_class.sql_flush, delete=delete)  # type: ignore[method-assign]
    emit = getattr(flush, "emit_post_migrate_signal")  # noqa: B009 (the name flush calls, set below)

    def emit_unless_kept(*args: Any, **kwargs: Any) -> None:
        if emptied_all[0]:
            emit(*args, **kwargs)

    setattr(flush, "emit_post_migrate_signal", emit_unless_kept)  # noqa: B010


@pytest.fixture(scope="session", autouse=True)
def _close_thread_sensitive_connections(django_db_setup: Any) -> Iterator[None]:
    """Before the test database is dropped: close the connections of asgiref's one thread-sensitive thread.

    Code run with asyncio.run in a test uses that process-wide thread for thread-sensitive database calls,
    and its connection outlived the test, so PostgreSQL refused to drop a database still in use."""
    yield
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Every test starts and ends in the default language. Django activates a request's language (a signed-in
    user's, a token client's) for the thread and never deactivates it, so code a later test runs outside a
    request (the demo model's reply, a notice's text) came out in the last request's language."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_cache(settings: Any) -> None:
    """Rate-limit counters start from zero in every test (a private in-process cache per test)."""
    import uuid

    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }


@pytest.fixture(autouse=True)
def _no_turn_rate_limit(settings: Any) -> None:
    """Tests send turns faster than anyone types; the tests of the limit set their own."""
    settings.CHAT_USER_TURNS_PER_MINUTE = 10_000
    settings.CHAT_ADDRESS_TURNS_PER_MINUTE = 10_000


@pytest.fixture(autouse=True)
def _offline_model(settings: Any) -> None:
    """No test may reach a real provider: the demo model unless a test picks another fake."""
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    settings.LLM_BACKEND = "demo"


@pytest.fixture
def fake_model(settings: Any) -> Iterator[Any]:
    from tests.fakes import FakeModelController, ScriptedChatModel

    ScriptedChatModel.reset()
    settings.LLM_BACKEND = "tests.fakes.ScriptedChatModel"
    yield FakeModelController()
    ScriptedChatModel.reset()


@pytest.fixture
def user(db: None) -> Any:
    from tests.factories import UserFactory

    return UserFactory(username="alice")


@pytest.fixture
def other_user(db: None) -> Any:
    from tests.factories import UserFactory

    return UserFactory(username="mallory")


@pytest.fixture
def api_token(user: Any) -> str:
    from accounts.services import api_token_create

    return api_token_create(user=user)[1]


@pytest.fixture
def api_client(client: Any, api_token: str) -> Any:
    """A Django test client that sends the user's bearer token."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {api_token}"
    return client
