"""Smoke test of `make run` as a newcomer gets it: a virtualenv with only requirements.txt, the
real serve script (uvicorn + Celery worker), one conversation through the API, and a background
memory extraction through the worker. Run on the embedded defaults and, when given, on
PostgreSQL + Redis.

    python scripts/smoke_run.py [--database-url URL --redis-url URL]

The test suite runs in the development virtualenv, so it cannot notice a dependency that only
requirements-dev.txt happens to provide; this does.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.processes import free_port, wait_for_port  # noqa: E402

# The three messages of SPEC §1: the third (in a new conversation) starts a background extraction.
MESSAGES = [
    (0, "I've always liked small phones, they're easy to use one-handed."),
    (0, "Today I'm helping a friend pick a phone — his budget this time is 3000."),
    (1, "I want a new phone, suggest a few."),
]


def runtime_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(ROOT / "requirements.txt")], check=True)
    return where / "bin" / "python"


def api(port: int, method: str, path: str, token: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def wait_until(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def smoke(python: Path, env: dict[str, str], label: str) -> None:
    manage = [str(python), str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "ensure_demo_user"], cwd=ROOT, env=env, check=True)
    token = (
        subprocess.run(
            [*manage, "create_api_token", "demo"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    log = Path(env["MEMORA_VAR_DIR"]) / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(python), str(ROOT / "scripts" / "serve.py")],
            cwd=ROOT,
            env={**env, "PORT": str(port)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, server, seconds=60, log=log)
        conversations = [api(port, "POST", "/conversations", token, {})["id"] for _ in range(2)]
        for index, text in MESSAGES:
            turn = api(port, "POST", f"/conversations/{conversations[index]}/messages", token, {"content": text})
            if turn["assistant_message"]["status"] != "complete":
                raise RuntimeError(f"the turn did not complete: {turn}")
        wait_until(lambda: api(port, "GET", "/memories", token), 60, "the worker to store a memory")
        memories = [m["content"] for m in api(port, "GET", "/memories", token)]
        if memories != ["Prefers small phones, finds them easier to use one-handed"]:
            raise RuntimeError(f"expected the one small-phone memory of SPEC §1, found {memories}")
    except Exception:
        print(log.read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        os.killpg(server.pid, signal.SIGINT)  # what Ctrl-C sends to `make run`
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            raise RuntimeError("Ctrl-C did not stop the web server and the worker") from None
    print(f"smoke ({label}): make run served a turn and its worker stored the memory", flush=True)


def reset_postgres(url: str) -> None:
    import psycopg  # available in the development virtualenv that runs this script

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def reset_redis(url: str) -> None:
    import redis  # a runtime dependency, also in the development virtualenv

    redis.Redis.from_url(url).flushdb()  # no stale tasks from an earlier run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_BACKEND"}}
    with tempfile.TemporaryDirectory(prefix="memora-smoke-") as tmp:
        python = runtime_venv(Path(tmp) / "venv")
        for label, extra in (("embedded defaults", {}), ("PostgreSQL + Redis", {"postgres": args.database_url})):
            if extra and not (args.database_url and args.redis_url):
                continue
            # As `make run` does: a development run, debug on, on loopback (the demo account needs both).
            env = {**base, "MEMORA_VAR_DIR": str(Path(tmp) / label.split()[0].lower()), "DJANGO_DEBUG": "1"}
            # A short quiet spell before the background run (the default waits a minute).
            env["MEMORY_EXTRACT_IDLE_SECONDS"] = "3"
            env.pop("HOST", None)
            env.pop("DATABASE_URL", None)
            env.pop("REDIS_URL", None)
            if extra:
                reset_postgres(args.database_url)
                reset_redis(args.redis_url)
                env.update(DATABASE_URL=args.database_url, REDIS_URL=args.redis_url)
            smoke(python, env, label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
