"""A web server killed mid-reply, with real processes: uvicorn on a scratch SQLite database, a slow local
OpenAI-compatible provider, SIGKILL, a restart. The reply is saved `interrupted` with the text streamed
so far, and the next turn in that conversation works at once."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.processes import free_port, migrated_database, stop, wait_for_port

ROOT = Path(__file__).resolve().parents[2]

# One server set-up is enough: it runs on its own scratch database whatever the pass.
pytestmark = pytest.mark.skipif(bool(settings.REDIS_URL), reason="runs once, in the first pass")


def slow_reply(body: dict[str, Any]) -> FakeResponse:
    user_text = next(str(m.get("content", "")) for m in reversed(body["messages"]) if m["role"] == "user")
    if "long" in user_text:
        return FakeResponse(chunks=[f"word{i} " for i in range(400)], chunk_delay=0.02)
    return FakeResponse("Short answer.")


class App:
    """`manage.py` and a uvicorn web server on a scratch database; the server can be killed and restarted."""

    def __init__(self, var_dir: Path, provider: FakeOpenAIServer) -> None:
        self.var_dir = var_dir
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        self.env.update(
            MEMORA_VAR_DIR=str(var_dir), LLM_BACKEND="openai", OPENAI_BASE_URL=provider.base_url,
            OPENAI_API_KEY="test-key", LLM_MAX_RETRIES="0", LOG_LEVEL="WARNING", CHAT_RECOVERY_SWEEP_SECONDS="1",
            DJANGO_DEBUG="1",  # a development run: the app keeps its own secret key under var/
        )  # fmt: skip
        self.server: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return done.stdout

    def start(self) -> None:
        log = (self.var_dir / "server.log").open("ab")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for_port(self.port, self.server, seconds=30, log=self.var_dir / "server.log")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    provider = FakeOpenAIServer().start()
    provider.responder = slow_reply
    app = App(tmp_path, provider)
    migrated_database(app.env, app.var_dir)
    try:
        yield app
    finally:
        if app.server is not None:
            stop(app.server)
        provider.stop()


class Api:
    """A small JSON client for the API (bearer token), over http.client."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.headers = port, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None, **headers: str) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = None if body is None else json.dumps(body)
        connection.request(method, path, body=data, headers={**self.headers, **headers})
        return connection.getresponse()

    def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = self.request(method, path, body)
        return response.status, json.loads(response.read() or b"null")


def test_a_reply_cut_by_a_killed_server_is_saved_interrupted_and_the_next_turn_works_at_once(app: App) -> None:
    token = app.manage("create_api_token", "alice", "--create-user").strip().splitlines()[-1]
    app.start()
    api = Api(app.port, token)
    conversation = api.json("POST", "/api/conversations", {})[1]["id"]
    messages = f"/api/conversations/{conversation}/messages"

    streamed = ""
    response = api.request("POST", messages, {"content": "Something long"}, Accept="text/event-stream")
    while len(streamed.split()) < 100:  # two seconds in: the text so far has been saved
        line = response.fp.readline().decode()
        if line.startswith("data: ") and '"text"' in line:
            streamed += json.loads(line[6:])["text"]
    assert app.server is not None
    app.server.send_signal(signal.SIGKILL)
    app.server.wait()
    killed_at = time.monotonic()

    app.start()
    listed = api.json("GET", messages)[1]
    recovered_in = time.monotonic() - killed_at
    reply = listed[-1]
    assert reply["status"] == "interrupted"
    assert len(reply["content"].split()) >= 50  # saved about once a second while it streamed
    assert streamed.startswith(reply["content"])

    status, again = api.json("POST", messages, {"content": "Are you still there?"})
    assert status == 200, again
    assert again["assistant_message"]["content"] == "Short answer."
    print(f"serving again with the reply recovered {recovered_in:.2f} s after SIGKILL (incl. server start)")
