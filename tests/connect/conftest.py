"""The connected tools' tests run against the app served for real (uvicorn, and a Celery worker for
extraction, tests/e2e/browser.py) with the fake provider in this process, and talk to it with the real
clients: the official `mcp` SDK's Streamable HTTP client and the `openai` package."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import ROOT, running_stack, stack_env
from tests.fake_openai import FakeOpenAIServer, FakeResponse

pytestmark = pytest.mark.needs_memory

# The served app, its worker and the shell below start once for the tests that use them (seconds of processor
# time each); with parallel workers (pytest-xdist, --dist loadgroup) those tests stay on one worker.
ONE_STACK = pytest.mark.xdist_group("connect-stack")

# A `manage.py shell` kept running against the served database: each line it reads is a JSON string of code,
# which it runs in a namespace of its own, as `manage.py shell -c` would, answering with one line: what the
# code printed, or the error. It closes its database connections after each, so each run sees the latest.
SERVE = """
import contextlib, io, json, sys, traceback
from django.db import connections
while line := sys.stdin.readline():
    printed, error = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(printed):
            exec(json.loads(line), {"__name__": "__main__"})
    except BaseException:
        error = traceback.format_exc()
    finally:
        connections.close_all()
    sys.__stdout__.write("REPLY" + json.dumps({"printed": printed.getvalue(), "error": error}) + "\\n")
    sys.__stdout__.flush()
"""

# Made in the served database (a scratch SQLite of its own) by `manage.py shell`.
SETUP = """
import json
from accounts.models import User
from accounts.services import api_token_create
from memory.services import memory_add

def user(name, memories):
    u = User.objects.create_user(username=name, password="correct-horse-battery-staple")
    for text in memories:
        memory_add(user=u, content=text)
    return u

ann = user("ann", ["I am allergic to peanuts.", "I live in Lyon.", "I play the cello in an orchestra."])
bob = user("bob", ["I am allergic to shellfish.", "Bob keeps bees."])
from chat.projects import project_create
thesis = project_create(user=ann, name="Thesis", memory_mode="isolated")
trip = project_create(user=ann, name="Trip", memory_mode="shared")
memory_add(user=ann, content="The thesis is due in June.", project=thesis)
memory_add(user=ann, content="The trip starts in Kyoto.", project=trip)
tokens = {
    "thesis": api_token_create(user=ann, name="thesis", project_id=thesis.pk)[1],
    "trip": api_token_create(user=ann, name="trip", project_id=trip.pk)[1],
    "full": api_token_create(user=ann, name="laptop")[1],
    "read": api_token_create(user=ann, name="reader", scopes=["memory:read"])[1],
    "propose": api_token_create(user=ann, name="proposer", scopes=["memory:read", "memory:propose"])[1],
    "chat": api_token_create(user=ann, name="chat only", scopes=["chat"])[1],
    "revoke": api_token_create(user=ann, name="to revoke")[1],
    "bob": api_token_create(user=bob, name="bob's")[1],
}
print("SETUP" + json.dumps(tokens))
"""


def judge_or_reply(body: dict[str, Any]) -> FakeResponse:
    """The provider: a judge call (JSON) learns the user's statement about tea; a chat call offered the
    client's `get_time` tool calls it; any other chat call says hello."""
    if body.get("response_format"):
        text = json.dumps(body["messages"])
        if "green tea" in text:
            return FakeResponse(
                json.dumps(
                    {"operations": [{"op": "add", "content": "I drink green tea every morning.", "sources": [1]}]}
                )
            )
        return FakeResponse(json.dumps({"operations": []}))
    if any(tool["function"]["name"] == "get_time" for tool in body.get("tools") or []):
        return FakeResponse(tool_calls=[{"id": "call_1", "name": "get_time", "arguments": "{}"}])
    return FakeResponse(chunks=["Hello ", "from ", "the ", "provider."])


@pytest.fixture(scope="session")
def provider() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    server.responder = judge_or_reply
    yield server
    server.stop()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, provider: FakeOpenAIServer) -> Iterator[dict[str, Any]]:
    var_dir = tmp_path_factory.mktemp("memora-connect")
    settings = {
        "LLM_BACKEND": "openai", "OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "test-key",
        "CHAT_MODEL": "local-model", "LLM_MAX_RETRIES": "0", "MEMORY_EXTRACT_MIN_TURNS": "1",
        "EMBEDDING_MODEL": "off",
    }  # fmt: skip
    # The shell starts first: its Django start-up overlaps the server's and the worker's.
    with Shell(stack_env(var_dir, settings), var_dir) as run, running_stack(var_dir, settings, worker=True) as url:
        tokens = json.loads(run(SETUP).split("SETUP", 1)[1])
        yield {"url": url, "env": run.env, "tokens": tokens, "var_dir": Path(var_dir), "shell": run}


class Shell:
    """The `SERVE` shell: `shell(code)` runs `code` in it and returns what it printed."""

    def __init__(self, env: dict[str, str], var_dir: Path) -> None:
        self.env, self.lock, self.log = env, threading.Lock(), Path(var_dir) / "shell.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "shell", "--no-imports", "-c", SERVE], cwd=ROOT, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            )  # fmt: skip

    def __enter__(self) -> Shell:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the loop ends at the end of its input
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __call__(self, code: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock:
            self.process.stdin.write(json.dumps(code) + "\n")
            self.process.stdin.flush()
            while (line := self.process.stdout.readline()) and not line.startswith("REPLY"):
                pass  # anything Django prints on starting
        if not line:
            raise RuntimeError(f"the shell exited with {self.process.wait()}:\n{self.log.read_text()}")
        reply = json.loads(line.removeprefix("REPLY"))
        if reply["error"]:
            raise RuntimeError(f"{code}\nfailed in the served database:\n{reply['error']}")
        return str(reply["printed"])


def shell(stack: dict[str, Any], code: str) -> Any:
    """Run `code` in the served database; it prints one JSON value after "OUT"."""
    return json.loads(stack["shell"](code).split("OUT", 1)[1])


def value(stack: dict[str, Any], setup: str, expression: str) -> Any:
    """The JSON value of `expression`, evaluated in the served database after `setup` (imports and names)."""
    return shell(stack, f"import json\n{setup}\nprint('OUT' + json.dumps({expression}))")
