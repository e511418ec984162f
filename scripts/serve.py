"""Run the web server (uvicorn, ASGI) and a real Celery worker together until Ctrl-C stops both.

Used by `make run`. If either process exits, the other is stopped too and the exit code is kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

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
        os.environ.get("CELERY_CONCURRENCY", "2"),
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
    ]
    backend = (
        "demo model (offline)"
        if settings.LLM_BACKEND == "demo"
        else f"{settings.CHAT_MODEL} at {settings.OPENAI_BASE_URL or 'api.openai.com'}"
    )
    print(
        f"Memora on http://{host}:{port}/  ·  database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
        f"  ·  broker: {settings.CELERY_BROKER_URL.split('://')[0]}  ·  model: {backend}",
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
