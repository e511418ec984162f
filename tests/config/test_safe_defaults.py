"""Safe by default: debug off, no start without a secret key, one switch for HTTPS, CSP and friends."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from accounts.models import User
from tests.helpers import settings_loader

ROOT = Path(__file__).resolve().parents[2]
CLEARED = [
    "DJANGO_DEBUG",
    "DJANGO_SECRET_KEY",
    "MEMORA_HTTPS",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "HOST",
    "API_DOCS_PUBLIC",
]


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    return settings_loader(monkeypatch, tmp_path, cleared=CLEARED)


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {*CLEARED, "DATABASE_URL", "REDIS_URL"}}
    base.update(MEMORA_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", **env)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=base, capture_output=True, text=True)


def start_both(tmp_path: Path, first: dict[str, str], second: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """`import config.asgi` with each environment, side by side (each start takes seconds of processor time),
    each with a runtime folder of its own."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(run, ["-c", "import config.asgi"], tmp_path / "first", **first),
            pool.submit(run, ["-c", "import config.asgi"], tmp_path / "second", **second),
        ]
        return [started.result() for started in runs]


def test_debug_is_off_unless_asked_for(load: Any) -> None:
    assert load()["DEBUG"] is False
    assert load(DJANGO_DEBUG="1")["DEBUG"] is True


def test_without_a_key_and_debug_off_the_key_stays_empty(load: Any) -> None:
    assert load()["SECRET_KEY"] == ""
    assert load(DJANGO_SECRET_KEY="from-the-environment")["SECRET_KEY"] == "from-the-environment"


def test_a_development_run_gets_a_random_key_kept_under_var(load: Any, tmp_path: Path) -> None:
    first = load(DJANGO_DEBUG="1")["SECRET_KEY"]
    assert len(first) >= 50
    assert (tmp_path / "secret_key").read_text().strip() == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0  # readable by its owner only
    assert load(DJANGO_DEBUG="1")["SECRET_KEY"] == first  # kept: sessions survive a restart


@pytest.mark.parametrize("entry", ["config.asgi", "config.wsgi"])
def test_the_app_refuses_to_start_without_a_key_with_one_line_saying_why(tmp_path: Path, entry: str) -> None:
    result = run(["-c", f"import {entry}"], tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "DJANGO_SECRET_KEY is not set" in lines[0]


@pytest.mark.parametrize("command", [["scripts/serve.py"], ["-m", "celery", "-A", "config", "worker"]])
def test_the_run_command_and_the_worker_refuse_to_start_without_a_key(tmp_path: Path, command: list[str]) -> None:
    result = run(command, tmp_path, PORT="9")  # nothing binds: they stop before starting anything
    assert result.returncode == 1
    assert "Memora will not start: DJANGO_SECRET_KEY is not set" in result.stderr.strip().splitlines()[-1]


def test_the_app_starts_with_a_key_or_in_debug(tmp_path: Path) -> None:
    with_key, in_debug = start_both(tmp_path, {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}, {"DJANGO_DEBUG": "1"})
    assert with_key.returncode == 0
    assert in_debug.returncode == 0


@pytest.mark.parametrize(
    "key", ["changeme", "django-insecure-" + "k3y" * 20, "short-but-random-Xq8", "ab" * 40, "your-secret-key"]
)
def test_the_app_refuses_to_start_with_a_weak_key_unless_in_debug(tmp_path: Path, key: str) -> None:
    result, in_debug = start_both(tmp_path, {"DJANGO_SECRET_KEY": key}, {"DJANGO_SECRET_KEY": key, "DJANGO_DEBUG": "1"})
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert "DJANGO_SECRET_KEY is too weak" in line
    assert in_debug.returncode == 0


def test_api_docs_are_public_in_debug_only_unless_configured(load: Any) -> None:
    assert load()["API_DOCS_PUBLIC"] is False
    assert load(DJANGO_DEBUG="1")["API_DOCS_PUBLIC"] is True
    assert load(API_DOCS_PUBLIC="1")["API_DOCS_PUBLIC"] is True
    assert load(DJANGO_DEBUG="1", API_DOCS_PUBLIC="0")["API_DOCS_PUBLIC"] is False


def test_https_is_one_switch(load: Any) -> None:
    plain = load()
    assert not (plain["SESSION_COOKIE_SECURE"] or plain["CSRF_COOKIE_SECURE"] or plain["SECURE_SSL_REDIRECT"])
    assert plain["SECURE_HSTS_SECONDS"] == 0 and plain["SECURE_PROXY_SSL_HEADER"] is None
    https = load(MEMORA_HTTPS="1")
    assert https["SESSION_COOKIE_SECURE"] and https["CSRF_COOKIE_SECURE"] and https["SECURE_SSL_REDIRECT"]
    assert https["SECURE_HSTS_SECONDS"] >= 31_536_000 and https["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert https["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")


def test_the_documented_production_settings_pass_the_deploy_check(tmp_path: Path) -> None:
    security = (ROOT / "docs" / "security.md").read_text()
    production = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "memora.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://memora.example.com",
        "MEMORA_HTTPS": "1",
    }
    for name in production:
        assert name in security.split("## Deploy checklist", 1)[1]  # the deploy checklist names each of them
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, **production)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_deploy_check_flags_the_development_defaults(tmp_path: Path) -> None:
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, DJANGO_DEBUG="1")
    assert result.returncode != 0


def test_pages_send_a_content_security_policy_without_inline_scripts(client: Any) -> None:
    response = client.get("/accounts/login/")
    policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'"
    assert "unsafe-inline" not in policy["style-src"] and "unsafe-eval" not in response["Content-Security-Policy"]
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert b"<script>" not in response.content


def test_htmx_is_told_not_to_inject_its_indicator_styles(client: Any, user: Any) -> None:
    client.force_login(user)
    page = client.get("/").content.decode()
    assert '"includeIndicatorStyles": false' in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("debug", "host", "created"), [(True, "127.0.0.1", True), (True, "0.0.0.0", False), (False, "127.0.0.1", False)]
)
def test_the_demo_account_is_only_for_a_development_run_on_loopback(
    settings: Any, monkeypatch: pytest.MonkeyPatch, debug: bool, host: str, created: bool
) -> None:
    settings.DEBUG = debug
    monkeypatch.setenv("HOST", host)
    call_command("ensure_demo_user", stdout=StringIO())
    assert User.objects.filter(username="demo").exists() is created


def test_quota_defaults(load: Any) -> None:
    s = load()
    assert (s["CHAT_USER_TURNS_PER_MINUTE"], s["MEMORY_MAX_ACTIVE"], s["MEMORY_MAX_OPS_PER_ANSWER"]) == (20, 500, 50)
