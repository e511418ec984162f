"""More than one web process (the production command, `scripts/serve.py --workers N`): what must be
shared is shared through PostgreSQL and Redis.

Two uvicorn processes serve the same application, as `--workers 2` starts them, but on two ports so
that the test decides which process each client talks to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.test import Client
from websockets.sync.client import ClientConnection, connect

from accounts.models import User
from accounts.services import api_token_create
from chat.consumers import user_group
from chat.models import Message
from chat.services import conversation_create
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.processes import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def database_url() -> str:
    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def web_processes(fake_openai: FakeOpenAIServer, tmp_path: Path) -> Iterator[list[str]]:
    """Two web processes on one PostgreSQL database (the test's) and one Redis; their base URLs."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "LLM_BACKEND"}}
    env.update(
        DATABASE_URL=database_url(), REDIS_URL=settings.REDIS_URL, MEMORA_VAR_DIR=str(tmp_path),
        OPENAI_BASE_URL=fake_openai.base_url, OPENAI_API_KEY="test-key", LLM_MAX_RETRIES="0",
        DJANGO_DEBUG="1", LOG_LEVEL="WARNING",
        DJANGO_SECRET_KEY=settings.SECRET_KEY,  # the test signs the session cookie the processes read
    )  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for i in range(2):
            port = free_port(exclude=ports)
            ports.append(port)
            log = (tmp_path / f"web{i}.log").open("wb")
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "uvicorn",
                        "config.asgi:application",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--ws",
                        "websockets-sansio",
                        "--log-level",
                        "warning",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        for i, (port, process) in enumerate(zip(ports, processes, strict=True)):
            wait_for_port(port, process, seconds=60, log=tmp_path / f"web{i}.log")
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        for process in processes:
            stop(process)


def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


def chat_socket(base: str, conversation_id: Any, cookie: str) -> ClientConnection:
    url = base.replace("http://", "ws://") + f"/ws/c/{conversation_id}/"
    return connect(url, additional_headers={"Origin": base, "Cookie": f"{settings.SESSION_COOKIE_NAME}={cookie}"})


def frames_until(socket: ClientConnection, text: str, seconds: float = 15) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = str(socket.recv(timeout=max(0.1, deadline - time.monotonic())))
        if text in frame:
            return frame
    raise AssertionError(f"{text!r} did not arrive")


def test_a_notice_reaches_the_users_pages_on_either_web_process(user: User, web_processes: list[str]) -> None:
    conversation = conversation_create(user=user)
    cookie = session_cookie(user)
    with (
        chat_socket(web_processes[0], conversation.pk, cookie) as first,
        chat_socket(web_processes[1], conversation.pk, cookie) as second,
    ):
        time.sleep(0.2)  # both sockets joined the user's group when they were accepted
        notice = {"type": "chat.notice", "html": "<p>Shared notice</p>"}
        async_to_sync(get_channel_layer().group_send)(user_group(user.pk), notice)
        assert "Shared notice" in frames_until(first, "Shared notice")
        assert "Shared notice" in frames_until(second, "Shared notice")


def test_a_turn_running_on_one_process_holds_the_conversation_on_the_other(
    user: User, web_processes: list[str], fake_openai: FakeOpenAIServer
) -> None:
    conversation = conversation_create(user=user)
    _, token = api_token_create(user=user)
    fake_openai.queue(FakeResponse(chunks=["Still ", "writing"], hang=True))
    with chat_socket(web_processes[0], conversation.pk, session_cookie(user)) as socket:
        socket.send(json.dumps({"action": "send", "content": "Write slowly"}))
        deadline = time.monotonic() + 15
        while not fake_openai.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake_openai.requests, "the turn did not reach the provider"

        # The conversation lock and the run slots live in the database, shared by every process.
        response = httpx.post(
            f"{web_processes[1]}/api/conversations/{conversation.pk}/messages",
            json={"content": "Me too"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=15,
        )
        assert response.status_code == 409, response.text[:300]
        socket.send(json.dumps({"action": "stop"}))
        frames_until(socket, 'data-state="idle"')


def test_a_turn_started_on_one_process_is_followed_and_stopped_from_a_page_on_the_other(
    user: User, web_processes: list[str], fake_openai: FakeOpenAIServer
) -> None:
    conversation = conversation_create(user=user)
    cookie = session_cookie(user)
    fake_openai.queue(FakeResponse(chunks=["Written on ", "the first process"], hang=True))
    with (
        chat_socket(web_processes[0], conversation.pk, cookie) as starter,
        chat_socket(web_processes[1], conversation.pk, cookie) as follower,
    ):
        frames_until(follower, 'id="turn-live"')  # live: in the conversation's group
        starter.send(json.dumps({"action": "send", "content": "Write slowly"}))
        # The other process's page gets the user's message and the reply as it streams...
        frames_until(follower, "Write slowly")
        assert "the first process" in frames_until(follower, "the first process")
        # ...and its Stop ends the turn running in the first process (the stop flag is in the database).
        follower.send(json.dumps({"action": "stop"}))
        ended = frames_until(follower, 'data-state="idle"', seconds=15)
        assert 'data-status="interrupted"' in ended
        frames_until(starter, 'data-state="idle"', seconds=15)
    reply = Message.objects.get(conversation=conversation, role=Message.Role.ASSISTANT)
    assert (reply.status, reply.content) == (Message.Status.INTERRUPTED, "Written on the first process")
    conversation.refresh_from_db()
    assert conversation.lock_token is None
