"""Run the web server (uvicorn, ASGI) and a real Celery worker together until Ctrl-C stops both.

Used by `make run`. If either process exits, the other is stopped too and the exit code is kept.

Production, more than one process (README, "Production"): with PostgreSQL and Redis configured,

    scripts/serve.py --workers 4 --celery-concurrency 4

runs 4 uvicorn worker processes on one port (uvicorn's own supervisor: they share the listening
socket, and a worker that dies is replaced) and one Celery worker with 4 processes. `--workers` above
1 needs REDIS_URL: the channel layer carries live replies and notices between processes, and the
embedded in-memory one cannot.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


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


def main() -> int:
    args = options()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from config.security import require_secret_key

    require_secret_key()  # one line and exit, before starting anything, when debug is off without a key

    if args.workers > 1 and not settings.REDIS_URL:
        print("--workers above 1 needs REDIS_URL (a channel layer shared by the processes).", file=sys.stderr)
        return 2
    port = os.environ.get("PORT", "8000")
    host = os.environ.get("HOST", "127.0.0.1")
    worker = [
        str(BIN / "celery"),
        "-A",
        "config",
        "worker",
        "--loglevel",
        "INFO",
        "--concurrency",
        str(args.celery_concurrency),
    ]
    web = [
        str(BIN / "uvicorn"),
        "config.asgi:application",
        "--host",
        host,
        "--port",
        port,
        "--ws",
        "websockets",
        "--log-level",
        "info",
        *(["--workers", str(args.workers)] if args.workers > 1 else []),
    ]
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
    procs = [subprocess.Popen(worker, cwd=ROOT), subprocess.Popen(web, cwd=ROOT)]

    def stop(*_: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(0.3)
    finally:
        stop()
        deadline = time.monotonic() + 15
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
    return next((p.returncode for p in procs if p.returncode and p.returncode > 0), 0)


if __name__ == "__main__":
    sys.exit(main())
