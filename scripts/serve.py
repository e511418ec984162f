"""Run the web server (uvicorn, ASGI) and a real Celery worker together until Ctrl-C stops both.

Used by `make run`. The two are supervised: if one exits or is killed (a crash, SIGKILL, out of
memory), it is started again after a short backoff (1 s, doubling up to 30 s while it keeps dying
quickly; back to 1 s once it has run for a minute), and the other one keeps running. Ctrl-C or
SIGTERM stops both cleanly (SIGTERM, then SIGKILL after 15 s) and exits.

A restarted web server first closes the replies its dead predecessor was writing (saved
"interrupted", their conversations free again; see chat/turn/leases.py), then serves; the browser's
socket reconnects on its own. A restarted worker sweeps for extraction work left behind
(memory/extraction/recovery.py).

Production, more than one process (docs/configuration.md, "Production"): with PostgreSQL and Redis configured,

    scripts/serve.py --workers 4 --celery-concurrency 4

runs 4 uvicorn worker processes on one port (uvicorn's own supervisor: they share the listening
socket, and a worker that dies is replaced) and one Celery worker with 4 processes. `--workers` above
1 needs REDIS_URL: the channel layer carries live replies and notices between processes, and the
embedded in-memory one cannot.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKOFF_FIRST, BACKOFF_MAX, HEALTHY_SECONDS = 1.0, 30.0, 60.0
STOP_SECONDS = 15.0


def log(text: str) -> None:
    print(f"[serve] {text}", flush=True)


@dataclass
class Child:
    name: str
    command: list[str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float = 0.0
    backoff: float = BACKOFF_FIRST
    restarts: int = field(default=0)

    def start(self) -> None:
        # Its own process group, so that stopping it reaches the processes it starts too (uvicorn's
        # workers, Celery's pool); and, on Linux, a SIGTERM if this script dies, even by SIGKILL.
        linux = sys.platform.startswith("linux")
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, start_new_session=True, preexec_fn=_die_with_parent if linux else None
        )
        self.started_at = time.monotonic()
        log(f"{self.name} started (pid {self.process.pid})")

    def check(self, now: float) -> None:
        """Start it again if it has exited, once its backoff has passed."""
        if self.process is not None:
            code = self.process.poll()
            if code is None:
                return
            ran = now - self.started_at
            if ran >= HEALTHY_SECONDS:
                self.backoff = BACKOFF_FIRST
            delay, self.backoff = self.backoff, min(self.backoff * 2, BACKOFF_MAX)
            log(f"{self.name} exited with {code} after {ran:.0f} s; starting it again in {delay:.0f} s")
            self.kill_group()  # what it started and left behind (its workers) goes with it
            self.process, self.restart_at = None, now + delay
        if now >= self.restart_at:
            self.restarts += 1
            self.start()

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.kill_group()

    def kill_group(self) -> None:
        """SIGKILL whatever is left of its process group: workers whose parent was killed would otherwise
        run on, holding database connections and the port."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


def _die_with_parent() -> None:
    """In the child, before it runs: have Linux send it SIGTERM when this script exits (PR_SET_PDEATHSIG)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve Memora: web server and Celery worker.")
    parser.add_argument(
        "--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "1")),
        help="web server processes on the one port (default: WEB_CONCURRENCY or 1; above 1 needs REDIS_URL)",
    )  # fmt: skip
    parser.add_argument(
        "--celery-concurrency", type=int, default=int(os.environ.get("CELERY_CONCURRENCY", "2")),
        help="Celery worker processes (default: CELERY_CONCURRENCY or 2)",
    )  # fmt: skip
    return parser.parse_args()


def commands(host: str, port: str, args: argparse.Namespace, trusted_proxies: str = "") -> list[Child]:
    """The worker's and the web server's command lines. `trusted_proxies` (MEMORA_TRUSTED_PROXIES) is the
    only source of uvicorn's --forwarded-allow-ips: uvicorn's own default trusts 127.0.0.1, so any local
    process could otherwise name the client's address in X-Forwarded-For and walk around every throttle."""
    worker = [
        str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO",
        "--concurrency", str(args.celery_concurrency),
        # One worker: no neighbours to sync with at start, no heartbeats between workers.
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    web = [
        # websockets' Sans-I/O protocol: uvicorn deprecated its older `websockets` one, which `--ws
        # websockets` will stop meaning; the browser tests already ran on this one.
        str(BIN / "uvicorn"), "config.asgi:application", "--host", host, "--port", port,
        "--ws", "websockets-sansio", "--log-level", "info",
        "--forwarded-allow-ips", trusted_proxies,
        *(["--workers", str(args.workers)] if args.workers > 1 else []),
    ]  # fmt: skip
    return [Child("worker", worker), Child("web server", web)]


def main() -> int:
    args = options()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from core.security import require_secret_key

    require_secret_key()  # one line and exit, before starting anything, when debug is off without a key

    if args.workers > 1 and not settings.REDIS_URL:
        print("--workers above 1 needs REDIS_URL (a channel layer shared by the processes).", file=sys.stderr)
        return 2
    port = os.environ.get("PORT", "8000")
    host = os.environ.get("HOST", "127.0.0.1")
    backend = (
        "demo model (offline)"
        if settings.LLM_BACKEND == "demo"
        else f"{settings.CHAT_MODEL} at {settings.OPENAI_BASE_URL or 'api.openai.com'}"
    )
    print(
        f"Memora on http://{host}:{port}/  ·  database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
        f"  ·  broker: {settings.CELERY_BROKER_URL.split('://')[0]}  ·  model: {backend}"
        f"  ·  web processes: {args.workers}",
        flush=True,
    )
    children = commands(host, port, args, trusted_proxies=settings.MEMORA_TRUSTED_PROXIES)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        for child in children:
            child.start()
        while not stopping:
            time.sleep(0.3)
            for child in children:
                if not stopping:
                    child.check(time.monotonic())
    finally:
        for child in children:
            child.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for child in children:
            child.wait(deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
