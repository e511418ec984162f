"""`make test`: lint (ruff, mypy), the whole suite on the embedded defaults (SQLite, in-memory channel layer,
filesystem broker), the chat and accounts tests again without the memory app installed (chat works on its
own; config/settings/test_without_memory.py, tests marked `needs_memory` left out, no browser tests), then
the whole suite again on PostgreSQL + Redis when they are reachable.

With CI=true, PostgreSQL, Redis and Chromium are required: their absence fails the run instead of
skipping tests, and a smoke test of `make run` (scripts/smoke_run.py) runs first (MEMORA_SMOKE=1
asks for it elsewhere). Extra arguments are passed to pytest (e.g. `scripts/run_tests.py -k api`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PG_URL = os.environ.get("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/14")
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SMOKE_PG_URL = os.environ.get("SMOKE_DATABASE_URL", PG_URL.rsplit("/", 1)[0] + "/memora_smoke")
SMOKE_REDIS_URL = os.environ.get("SMOKE_REDIS_URL", "redis://127.0.0.1:6379/13")
WITHOUT_MEMORY_SETTINGS = "config.settings.test_without_memory"
WITHOUT_MEMORY_PATHS = ("tests/chat", "tests/accounts")


def reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 0), timeout=2):
            return True
    except OSError:
        return False


def pytest(env_extra: dict[str, str], args: list[str]) -> int:
    # The suite picks its own settings module (pyproject.toml) and services; the shell's never leak in.
    dropped = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL", "REDIS_URL", "LLM_BACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in {*dropped, "DJANGO_SETTINGS_MODULE"}}
    env["MEMORA_VAR_DIR"] = tempfile.mkdtemp(prefix="memora-test-")
    env.update(env_extra)
    return subprocess.call([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env)


def without_memory_targets(args: list[str]) -> list[str]:
    """What the run without the memory app covers: the chat and accounts tests on a full run, those among
    the paths of a focused run, nothing when pytest options (`-k …`) narrow the run."""
    if not args:
        return list(WITHOUT_MEMORY_PATHS)
    if any(arg.startswith("-") for arg in args):
        return []

    def covered(arg: str) -> bool:
        path = arg.split("::")[0].rstrip("/")
        return any(path == root or path.startswith(root + "/") for root in WITHOUT_MEMORY_PATHS)

    return [arg for arg in args if covered(arg)]


def services_missing(have_pg: bool, have_redis: bool, have_chromium: bool) -> bool:
    """Report the services this machine lacks; True when that must fail the run (CI requires them all)."""
    missing = [
        name for name, ok in (("PostgreSQL", have_pg), ("Redis", have_redis), ("Chromium", have_chromium)) if not ok
    ]
    if missing and CI:
        print(f"CI=true but not available: {', '.join(missing)}. These tests are required in CI.", file=sys.stderr)
        return True
    for name in missing:
        print(f"note: {name} not available here; the tests that need it are skipped (they are required in CI).")
    return False


def lint() -> int:
    print("== Lint: ruff and mypy", flush=True)
    bin_dir = Path(sys.executable).parent
    for command in ([str(bin_dir / "ruff"), "check", "."], [str(bin_dir / "mypy"), "."]):
        if subprocess.call(command, cwd=ROOT) != 0:
            return 1
    return 0


def smoke_run(have_services: bool) -> int:
    # What a newcomer runs, in a virtualenv with the runtime pins only (see smoke_run.py).
    print("== Smoke test of make run (runtime dependencies only, real worker)", flush=True)
    smoke = [sys.executable, str(ROOT / "scripts" / "smoke_run.py")]
    if have_services:
        smoke += ["--database-url", SMOKE_PG_URL, "--redis-url", SMOKE_REDIS_URL]
    if subprocess.call(smoke, cwd=ROOT) != 0:
        return 1
    return 0


def suite_without_memory(args: list[str]) -> int:
    """The chat and accounts pass without the memory app: 0 when it passed, found nothing or did not run."""
    targets = without_memory_targets(args)
    if not targets:
        return 0
    print("== Chat and accounts without the memory app (embedded defaults, no browser tests)", flush=True)
    options = [f"--ds={WITHOUT_MEMORY_SETTINGS}", "-m", "not needs_memory and not browser"]
    alone = pytest({"MEMORA_BROWSER_TESTS": "0"}, [*options, *targets])
    return 0 if alone in (0, 5) else alone


def suite_on_services(args: list[str]) -> int:
    """The whole suite again on PostgreSQL and Redis: 0 when it passed or found nothing."""
    print("== Suite on PostgreSQL and Redis (browser tests ran above)", flush=True)
    second = pytest({"DATABASE_URL": PG_URL, "REDIS_URL": REDIS_URL, "MEMORA_BROWSER_TESTS": "0"}, args)
    return 0 if second in (0, 5) else second


def main() -> int:
    args = sys.argv[1:]
    have_pg, have_redis = reachable(PG_URL), reachable(REDIS_URL)
    have_chromium = Path(CHROMIUM).exists() or shutil.which("chromium") is not None
    if services_missing(have_pg, have_redis, have_chromium):
        return 1
    browser = {"MEMORA_BROWSER_TESTS": "1" if have_chromium else "0", "CHROMIUM_PATH": CHROMIUM}

    if not args and lint() != 0:  # a full run also lints; a focused run (`-k …`, paths) skips straight to pytest
        return 1
    if (CI or os.environ.get("MEMORA_SMOKE") == "1") and smoke_run(have_pg and have_redis) != 0:
        return 1

    print("== Suite on the embedded defaults (SQLite, in-memory channel layer, filesystem broker)", flush=True)
    code = pytest(browser, args)
    if code not in (0, 5) or (code == 5 and not args):
        return code or 1
    alone = suite_without_memory(args)
    if alone:
        return alone
    if have_pg and have_redis:
        second = suite_on_services(args)
        if second:
            return second
    return 0


if __name__ == "__main__":
    sys.exit(main())
