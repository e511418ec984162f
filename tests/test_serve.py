"""`make run`'s supervisor (scripts/serve.py), with real processes: the web server or the worker killed
with SIGKILL is started again and the app serves within 30 s, the other one untouched; SIGTERM stops all."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.processes import free_port, migrated_database, wait_for_port

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
    migrated_database(env, tmp_path)
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


def test_a_spoofed_forwarded_for_from_a_local_peer_does_not_escape_the_throttle(
    serve: tuple[subprocess.Popen[bytes], int],
) -> None:
    """uvicorn's own default trusts X-Forwarded-For from 127.0.0.1; serve.py trusts no one unless told."""
    _, port = serve
    statuses = []
    for attempt in range(settings.API_AUTH_FAILURE_LIMIT + 1):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/me",
            headers={"Authorization": f"Bearer mem_guess{attempt}", "X-Forwarded-For": f"198.51.100.{attempt}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses.append(response.status)
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
    assert statuses[:-1] == [401] * settings.API_AUTH_FAILURE_LIMIT
    assert statuses[-1] == 429


def test_the_web_server_trusts_exactly_the_configured_proxies() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import serve as script
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    args = script.argparse.Namespace(workers=1, celery_concurrency=1)

    def allowed(**kwargs: str) -> str:
        web = script.commands("127.0.0.1", "8000", args, **kwargs)[1].command
        return web[web.index("--forwarded-allow-ips") + 1]

    assert allowed() == ""  # no one: uvicorn would otherwise trust 127.0.0.1
    assert allowed(trusted_proxies="10.0.0.5,10.1.0.0/16") == "10.0.0.5,10.1.0.0/16"
