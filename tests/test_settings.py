"""Settings come from the environment (SPEC §5): defaults need no server, variables switch to real ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import settings_loader

VARIABLES = [
    "DATABASE_URL",
    "REDIS_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CHAT_MODEL",
    "MEMORY_MODEL",
    "LLM_BACKEND",
    "LLM_TIMEOUT",
    "LLM_MAX_RETRIES",
    "MEMORY_EXTRACT_MIN_TURNS",
    "CHAT_USER_RUN_SLOTS",
    "CHAT_MAX_TOOL_STEPS",
    "DJANGO_DEBUG",
]


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Evaluate config.settings afresh under the given environment; returns its names."""
    return settings_loader(monkeypatch, tmp_path, cleared=VARIABLES)


def test_defaults_need_no_server_and_no_provider(load: Any, tmp_path: Path) -> None:
    s = load()
    database = s["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(database["NAME"]).parent == tmp_path
    assert s["REDIS_URL"] == ""
    assert s["CHANNEL_LAYERS"]["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert s["CELERY_BROKER_URL"] == "filesystem://"
    assert s["CELERY_BROKER_TRANSPORT"] == "core.broker:FilesystemTransport"
    assert s["LLM_BACKEND"] == "demo"
    assert s["MEMORY_MODEL"] == s["CHAT_MODEL"]
    assert s["MEMORY_EXTRACT_MIN_TURNS"] == 3
    assert (s["CHAT_MAX_MESSAGE_CHARS"], s["CHAT_USER_RUN_SLOTS"]) == (8000, 2)


def test_sqlite_is_set_up_for_a_web_server_and_a_worker_sharing_the_file(load: Any) -> None:
    options = load()["DATABASES"]["default"]["OPTIONS"]
    assert "journal_mode=WAL" in options["init_command"]
    assert options["transaction_mode"] == "IMMEDIATE"  # writers queue at BEGIN instead of failing mid-way
    assert options["timeout"] >= 5


@pytest.mark.parametrize("env", [{"OPENAI_API_KEY": "sk-test"}, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}])
def test_a_key_or_a_base_url_selects_the_openai_backend(load: Any, env: dict[str, str]) -> None:
    assert load(**env)["LLM_BACKEND"] == "openai"


def test_llm_backend_overrides_the_choice(load: Any) -> None:
    assert load(OPENAI_API_KEY="sk-test", LLM_BACKEND="demo")["LLM_BACKEND"] == "demo"


def test_models_timeouts_and_limits_come_from_the_environment(load: Any) -> None:
    s = load(
        CHAT_MODEL="deepseek-chat",
        LLM_TIMEOUT="12.5",
        LLM_MAX_RETRIES="0",
        MEMORY_EXTRACT_MIN_TURNS="5",
        CHAT_USER_RUN_SLOTS="3",
        CHAT_MAX_TOOL_STEPS="6",
    )
    assert (s["CHAT_MODEL"], s["MEMORY_MODEL"]) == ("deepseek-chat", "deepseek-chat")
    assert (s["LLM_TIMEOUT"], s["LLM_MAX_RETRIES"]) == (12.5, 0)
    assert (s["MEMORY_EXTRACT_MIN_TURNS"], s["CHAT_USER_RUN_SLOTS"], s["CHAT_MAX_TOOL_STEPS"]) == (5, 3, 6)
    assert load(MEMORY_MODEL="judge-model")["MEMORY_MODEL"] == "judge-model"


def test_database_url_selects_postgresql(load: Any) -> None:
    database = load(DATABASE_URL="postgres://memora:secret@db.example:5432/memora")["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["NAME"], database["HOST"], database["PORT"]) == ("memora", "db.example", 5432)
    assert "init_command" not in database.get("OPTIONS", {})


def test_the_postgresql_connection_pool_is_opt_in(load: Any) -> None:
    url = "postgres://memora:secret@db.example:5432/memora"
    assert "pool" not in load(DATABASE_URL=url)["DATABASES"]["default"].get("OPTIONS", {})
    pooled = load(DATABASE_URL=url, DATABASE_POOL="1", DATABASE_POOL_MAX_SIZE="40")["DATABASES"]["default"]
    assert pooled["OPTIONS"]["pool"]["max_size"] == 40


def test_redis_url_moves_the_broker_channel_layer_and_cache_to_redis(load: Any) -> None:
    s = load(REDIS_URL="redis://127.0.0.1:6379/3")
    assert s["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/3"
    assert s["CHANNEL_LAYERS"]["default"]["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    # Read with a socket timeout above channels_redis's 5 s blocking pop, so idle consumers survive; a pool
    # above redis-py's 100 (one connection per open page); room for a page that falls behind.
    assert s["CHANNEL_LAYERS"]["default"]["CONFIG"] == {
        "hosts": [{"address": "redis://127.0.0.1:6379/3", "socket_timeout": 30, "max_connections": 5000}],
        "capacity": 1000,
    }
    assert s["CELERY_BROKER_TRANSPORT"] == "core.broker:RedisTransport"
    # Rate-limit counters shared by every process, through one connection pool per process.
    assert s["CACHES"]["default"] == {
        "BACKEND": "core.cache.SharedRedisCache",
        "LOCATION": "redis://127.0.0.1:6379/3",
        "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},  # the counters fail open, fast
    }


def test_the_running_settings_use_a_custom_user_and_never_a_real_provider_in_tests(settings: Any) -> None:
    assert settings.AUTH_USER_MODEL == "accounts.User"
    assert settings.LLM_BACKEND == "demo"
    assert settings.OPENAI_API_KEY == ""


def test_debug_picks_the_development_or_the_production_module(load: Any) -> None:
    from tests.helpers import load_settings

    assert load_settings("config.settings.production")["DEBUG"] is False
    assert load_settings("config.settings.development")["DEBUG"] is True
    assert load()["DEBUG"] is False and load(DJANGO_DEBUG="1")["DEBUG"] is True


def test_the_test_suite_runs_on_the_test_settings(settings: Any) -> None:
    import os

    assert os.environ["DJANGO_SETTINGS_MODULE"] == "config.settings.test"
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    assert settings.SECRET_KEY
