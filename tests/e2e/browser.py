"""What the browser tests share: the app launcher (uvicorn and, when asked, a real Celery worker on a
scratch SQLite database), signing up through the form, and where screenshots go."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.processes import chromium_path, free_port, migrated_database, stop, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = chromium_path()
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


def worker_ports(first: int, last: int) -> range:
    """The ports this process's servers take: E2E_PORT_FIRST to E2E_PORT_LAST, or its share of them when
    pytest-xdist runs the suite in parallel workers (no two workers pick the same port at once)."""
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    share = (last - first) // count
    return range(first + index * share, first + (index + 1) * share)


PORTS = worker_ports(int(os.environ.get("E2E_PORT_FIRST", "18310")), int(os.environ.get("E2E_PORT_LAST", "18399")))
PASSWORD = "correct-horse-battery-staple"
# Screenshots go to a temporary folder unless this names one (`make screenshots` names docs/screenshots/).
SCREENSHOTS_VARIABLE = "MEMORA_SCREENSHOTS_DIR"


def stack_env(var_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    """The environment `running_stack` runs the app with (also for `manage`)."""
    drop = {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_BACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(MEMORA_VAR_DIR=str(var_dir), DJANGO_DEBUG="1", LOG_LEVEL="WARNING")
    env.update(DJANGO_SETTINGS_MODULE="tests.e2e.server_settings")  # the development run, cheap password hashes
    # Every browser test signs up from this one address; the sign-up throttle has tests of its own.
    env.update(ACCOUNTS_SIGNUPS_PER_HOUR="100000", CHAT_ADDRESS_TURNS_PER_MINUTE="0")
    # Background extraction at once, not after a minute of quiet (a test may set its own wait).
    env.update(MEMORY_EXTRACT_IDLE_SECONDS="0")
    env.update(settings)
    return env


def manage(env: dict[str, str], *args: str) -> None:
    """`manage.py …` against a stack's database (to set up what no page creates)."""
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


@contextmanager
def running_stack(var_dir: Path, settings: dict[str, str], *, worker: bool = False) -> Iterator[str]:
    """uvicorn (and, with `worker`, a real Celery worker) on a scratch SQLite database in `var_dir`, as a
    development run with the embedded defaults (the filesystem broker and the in-memory channel layer);
    `settings` are extra environment variables. Yields the server's base URL."""
    env = stack_env(var_dir, settings)
    migrated_database(env, var_dir)
    port = free_port(PORTS)
    log = var_dir / "server.log"
    procs: list[subprocess.Popen[bytes]] = []
    with log.open("wb") as out:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--ws", "websockets-sansio", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        ))  # fmt: skip
        if worker:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "--loglevel", "WARNING",
                 "--without-mingle", "--without-gossip", "--without-heartbeat"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            ))  # fmt: skip
    try:
        wait_for_port(port, procs[0], log=log)
        yield f"http://127.0.0.1:{port}"
    finally:
        for proc in procs:
            stop(proc)


def open_start_page(page: Any, base: str) -> None:
    """Follow "New conversation" and wait until the start page's scripts have run (Enter sends): on a
    loaded machine the textarea can take typing before they do, and Enter then adds a line."""
    from playwright.sync_api import expect

    page.get_by_role("link", name="New conversation").click()
    expect(page).to_have_url(f"{base}/")
    page.wait_for_load_state("load")


def sign_up(page: Any, base: str, username: str) -> None:
    """Sign up through the form and wait until the chat page's scripts have run (Enter sends)."""
    from playwright.sync_api import expect

    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/")
    page.wait_for_load_state("load")
