"""`make run`'s supervisor (scripts/serve.py), with real processes: the web server or the worker killed
with SIGKILL is started again and the app serves within 30 s, the other one untouched; SIGTERM stops all."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.processes import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[1]
RESTART_SECONDS = 30  # the contract

pytestmark = pytest.mark.skipif(bool(settings.REDIS_URL), reason="runs once, in the first pass")


def children(pid: int) -> dict[str, int]:
    """The supervisor's children by role ("web", "worker")."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found["worker" if "celery" in command else "web"] = int(child)
    return found


def wait_for(condition: object, seconds: float) -> float:
    """Seconds until `condition()` is true; fails after `seconds`."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if condition():  # type: ignore[operator]
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s")


def serves(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(MEMORA_VAR_DIR=str(tmp_path), LOG_LEVEL="WARNING", CELERY_CONCURRENCY="1", DJANGO_DEBUG="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    env["PORT"] = str(port)
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "scripts/serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, process, seconds=60, log=tmp_path / "serve.log")
        yield process, port
    finally:
        with contextlib.suppress(ProcessLookupError):  # and whatever a killed worker left behind
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_a_killed_web_server_or_worker_is_restarted_and_sigterm_stops_everything(
    serve: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = serve
    first = children(process.pid)
    assert set(first) == {"web", "worker"}

    os.kill(first["web"], signal.SIGKILL)
    web_back = wait_for(lambda: serves(port) and children(process.pid).get("web") not in (None, first["web"]), 30)
    assert children(process.pid)["worker"] == first["worker"]  # the worker did not notice

    os.kill(first["worker"], signal.SIGKILL)
    wait_for(lambda: children(process.pid).get("worker") not in (None, first["worker"]), RESTART_SECONDS)
    assert serves(port)
    assert process.poll() is None

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=25) == 0
    print(f"web server serving again {web_back:.1f} s after SIGKILL")
    assert not serves(port)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; it only waits for its parent to collect it


def test_nothing_it_started_outlives_the_supervisor_killed_with_sigkill(
    serve: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = serve
    started = children(process.pid)
    grandchildren = [
        int(g) for pid in started.values() for g in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    ]

    process.kill()
    process.wait()

    # The web server and the worker get SIGTERM when it dies, and stop what they started in turn.
    wait_for(lambda: not any(alive(pid) for pid in [*started.values(), *grandchildren]), 30)
    assert not serves(port)
