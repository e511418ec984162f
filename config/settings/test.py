"""The test suite's settings (pytest): the settings a real start would pick, plus what only tests want."""

import os
from pathlib import Path


def _isolate_parallel_worker(worker: str) -> None:
    """Under pytest-xdist (`make test` runs the suite in parallel workers: gw0, gw1, …), each worker gets
    a runtime folder of its own (filesystem broker, imports) and a Redis database of its own, the Nth
    after REDIS_URL's (channel-layer groups and the Celery queue are named alike in every worker, whose
    conversations and users are numbered alike). The databases are pytest-django's, one per worker.
    Done once: the processes a test starts with these settings inherit the worker's environment as it is."""
    os.environ["MEMORA_TEST_WORKER"] = worker
    index = int(worker.removeprefix("gw") or 0)
    var_dir = Path(os.environ.get("MEMORA_VAR_DIR") or Path(__file__).resolve().parents[2] / "var") / worker
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    redis_url = os.environ.get("REDIS_URL", "").strip()
    if redis_url:
        base, _, number = redis_url.rpartition("/")
        if not number.isdigit():  # no database named: the URL ends at the host
            base, number = redis_url.rstrip("/"), "0"
        os.environ["REDIS_URL"] = f"{base}/{(int(number) + index) % 16}"


if os.environ.get("PYTEST_XDIST_WORKER", "") not in ("", os.environ.get("MEMORA_TEST_WORKER")):
    _isolate_parallel_worker(os.environ["PYTEST_XDIST_WORKER"])

from config.settings import *  # noqa: E402, F403

# Tests run without DJANGO_SECRET_KEY; a fixed key stands in (a real start refuses to run keyless).
SECRET_KEY = SECRET_KEY or "insecure-key-for-tests-only-" + "x" * 40  # noqa: F405
# The production hasher costs a third of a second per user; tests need no strength.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests never ask a model server for its window unless they mean to (chat.llm.server_facts).
CHAT_CONTEXT_FROM_SERVER = False
# The API conformance tests read /api/openapi.json anonymously (the production default is tested apart).
API_DOCS_PUBLIC = True
# Background extraction runs at once unless a test asks for the wait for a quiet spell (tests/memory/test_bursts.py).
MEMORY_EXTRACT_IDLE_SECONDS = 0.0
# Tests embed only when they mean to (the embedded model costs tens of milliseconds a text): they set
# EMBEDDING_MODEL to "" for it, or to a name served by tests/fake_openai.py.
EMBEDDING_MODEL = "off"
