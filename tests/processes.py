"""Local processes for the browser tests, the tests of real processes, the benchmarks and the smoke test of
`make run`: a migrated scratch database, a free port, waiting for a server to listen, and stopping it."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Debian's headless shell (package chromium-headless-shell: the build Playwright itself runs headless) takes
# about a quarter less processor time than the whole browser, which stands in where only it is installed.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"


def chromium_path() -> str:
    """The browser the browser tests drive: CHROMIUM_PATH, else the headless shell, else the whole browser."""
    return os.environ.get("CHROMIUM_PATH") or (HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else "/usr/bin/chromium")


# The database this process migrated first, by settings module (the run without the memory app has fewer tables).
_migrated: dict[str, Path] = {}


def migrated_database(env: dict[str, str], var_dir: Path) -> None:
    """A migrated SQLite database in `var_dir` (what MEMORA_VAR_DIR names) for a server or worker started
    with `env`: the first one a test process needs runs `manage.py migrate` (seconds of processor time),
    every one gets a copy of the result."""
    settings = env.get("DJANGO_SETTINGS_MODULE", "")
    if settings not in _migrated:
        folder = Path(tempfile.mkdtemp(prefix="memora-migrated-"))
        atexit.register(shutil.rmtree, folder, True)
        migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v0"]
        subprocess.run(migrate, cwd=ROOT, env={**env, "MEMORA_VAR_DIR": str(folder)}, check=True)
        _migrated[settings] = folder / "memora.sqlite3"
    var_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_migrated[settings], var_dir / "memora.sqlite3")


def free_port(ports: Iterable[int] | None = None, exclude: Collection[int] = ()) -> int:
    """A free port on 127.0.0.1: the first in `ports` (a range the caller keeps to itself), or any
    the system gives when no range is named. `exclude` holds ports already chosen but not yet bound."""
    for port in ports if ports is not None else [0]:
        if port in exclude:
            continue
        with socket.socket() as s:
            # As the servers bind (uvicorn sets SO_REUSEADDR): a port whose last server stopped a moment
            # ago, its connections in TIME_WAIT, is free again, so a small range serves a whole run.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            chosen = int(s.getsockname()[1])
        if chosen not in exclude:
            return chosen
    raise RuntimeError("no free port")


def wait_for_port(port: int, process: subprocess.Popen[bytes], *, seconds: float = 90, log: Path | None = None) -> None:
    """Return once `port` accepts connections; fail at once if `process` exits, or after `seconds`. The
    default is generous: a server that starts costs no more for it, and on a busy machine Django's start
    alone has taken over 30 s."""
    detail = (lambda: f":\n{log.read_text()}") if log is not None else (lambda: "")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}{detail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open within {seconds:g} s{detail()}")


def stop(process: subprocess.Popen[bytes], *, seconds: float = 10) -> None:
    """SIGTERM, then SIGKILL if it is still running after `seconds`."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class PrivateRedis:
    """A redis-server of a test's own on a free port, keeping nothing on disk, which the test may stop
    (to see Redis go away) and start again: `redis()` starts it, `redis.url` names it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.servers: list[subprocess.Popen[bytes]] = []

    def __call__(self) -> subprocess.Popen[bytes]:
        server = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port, server, seconds=10)
        self.servers.append(server)
        return server

    def close(self) -> None:
        for server in self.servers:
            stop(server, seconds=5)
