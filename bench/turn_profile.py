"""Where a turn's own time goes before the provider's first token: a phase-by-phase trace.

    .venv/bin/python bench/turn_profile.py [--turns 40] [--database-url postgres://…/name]

Runs the real ASGI application in this process (Django's handler, the ninja API, the agent, the OpenAI
adapter) against a local fake provider in a thread, sends turns through `POST
/api/conversations/{id}/messages` with `Accept: text/event-stream`, and times each phase by wrapping
the functions the turn calls: authentication, the conversation lookup, `turn_start`, building the
model input, the provider receiving the request, and the first delta leaving the API. Each phase also
reports its SQL queries. Gaps between phases are thread hops and event-loop work; beside each gap, the
process's CPU time over it (nothing else runs in this process: a figure a loaded machine changes less
than wall time), and at the end the thread hops (`sync_to_async` calls) from the request to its first delta.

`bench/turn_latency.py` measures the whole thing end to end through real servers; this script says
where the milliseconds go. Database: a scratch SQLite file, or `--database-url` (its own name).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

marks: dict[str, float] = {}
cpu_marks: dict[str, float] = {}  # the process's CPU time at each mark: little else runs in this process
hops: list[int] = []  # thread hops (sync_to_async calls) between the request and its first delta
durations: dict[str, list[float]] = defaultdict(list)
queries: dict[str, list[int]] = defaultdict(list)
gaps: dict[str, list[float]] = defaultdict(list)
cpu_gaps: dict[str, list[float]] = defaultdict(list)


def mark(name: str) -> None:
    marks[name] = time.perf_counter()
    cpu_marks[name] = time.process_time()


def traced(name: str, func: Any) -> Any:
    """`func`, recording its start, end, duration and query count under `name`."""
    from django.db import connection

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        count = [0]

        def counter(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            count[0] += 1
            return execute(sql, params, many, context)

        mark(f"{name}:start")
        with connection.execute_wrapper(counter):
            result = func(*args, **kwargs)
        mark(f"{name}:end")
        durations[name].append(marks[f"{name}:end"] - marks[f"{name}:start"])
        queries[name].append(count[0])
        return result

    return wrapper


def install() -> None:

    from accounts import auth
    from chat import api, selectors
    from chat.turn import transactions

    auth.api_token_check = traced("authenticate", auth.api_token_check)  # type: ignore[assignment]
    selectors.conversation_get_for_user = traced("conversation lookup", selectors.conversation_get_for_user)
    transactions.turn_start = traced("turn_start", transactions.turn_start)  # looked up by agent._begin at each call
    from chat.turn import metered, model_input

    # The first input is built inside the turn's start (TurnMeter.build, in the same trip to the database).
    model_input.build_model_input = traced("build_model_input", model_input.build_model_input)
    metered_build = metered.TurnMeter.build

    def build(self: Any, ctx: Any, context: Any) -> Any:
        return traced("build_model_input", functools.partial(metered_build, self))(ctx, context)

    metered.TurnMeter.build = build  # type: ignore[method-assign]
    sse_for = api._sse_for

    def first_delta(event: Any) -> bytes:
        if event.type == "delta" and "first delta" not in marks:
            mark("first delta")
        return sse_for(event)

    api._sse_for = first_delta  # type: ignore[assignment]
    from asgiref.sync import SyncToAsync

    hop = SyncToAsync.__call__

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "request" in marks and "first delta" not in marks:
            hops[-1] += 1
        return await hop(self, *args, **kwargs)

    SyncToAsync.__call__ = counted  # type: ignore[method-assign]


async def one_turn(client: Any, token: str) -> None:
    response = await client.post("/api/conversations", json={}, headers={"Authorization": f"Bearer {token}"})
    conversation = response.json()["id"]
    marks.clear()
    hops.append(0)
    mark("request")
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    async with client.stream(
        "POST", f"/api/conversations/{conversation}/messages", json={"content": "Hello"}, headers=headers
    ) as reply:
        async for _ in reply.aiter_bytes():
            pass


def record_gaps() -> None:
    order = [
        ("request → authenticate", "request", "authenticate:start"),
        ("authenticate → lookup", "authenticate:end", "conversation lookup:start"),
        ("lookup → turn_start", "conversation lookup:end", "turn_start:start"),
        ("turn_start → build_model_input", "turn_start:end", "build_model_input:start"),
        ("build_model_input → provider receives", "build_model_input:end", "provider"),
        ("provider receives → first delta out", "provider", "first delta"),
        ("request → first delta out (total)", "request", "first delta"),
    ]
    for label, start, end in order:
        if start in marks and end in marks:
            gaps[label].append(marks[end] - marks[start])
            cpu_gaps[label].append(cpu_marks[end] - cpu_marks[start])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--database-url", default="", help="PostgreSQL URL with a database name of your own")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="memora-profile-")
    for key in ("REDIS_URL", "DATABASE_URL"):
        os.environ.pop(key, None)
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    os.environ.update(
        MEMORA_VAR_DIR=scratch, DJANGO_SETTINGS_MODULE="config.settings", LLM_BACKEND="openai",
        OPENAI_API_KEY="bench", CHAT_MODEL="bench", LLM_MAX_RETRIES="0", LOG_LEVEL="WARNING",
        DJANGO_DEBUG="1",  # as `make run` serves (no secret key needed)
        CHAT_USER_TURNS_PER_MINUTE="0",  # one user sends every turn here; the quota is not what is measured
        CHAT_ADDRESS_TURNS_PER_MINUTE="0",
    )  # fmt: skip
    from tests.fake_openai import FakeOpenAIServer, FakeResponse

    provider = FakeOpenAIServer().start()
    os.environ["OPENAI_BASE_URL"] = provider.base_url

    def respond(body: dict[str, Any]) -> FakeResponse:
        mark("provider")
        return FakeResponse(chunks=[f"word{i} " for i in range(5)])

    provider.responder = respond

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from accounts.models import User
    from accounts.services import api_token_create

    user = User.objects.create_user(username=f"profile{os.getpid()}", password="profile-password-1")
    _, token = api_token_create(user=user)
    install()

    import httpx2 as httpx

    from config.asgi import application

    async def run() -> None:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            for _ in range(3):  # warm up
                await one_turn(client, token)
            for table in (durations, queries, gaps, cpu_gaps):
                table.clear()
            hops.clear()
            for _ in range(args.turns):
                await one_turn(client, token)
                record_gaps()
                await asyncio.sleep(0.01)

    try:
        asyncio.run(run())
    finally:
        provider.stop()
        User.objects.filter(pk=user.pk).delete()

    from django.db import connection

    load = os.getloadavg()
    print(
        f"Turn phases through the API, in process ({connection.vendor}, {args.turns} turns, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, thread {threading.get_ident() % 1000})"
    )
    for name, values in durations.items():
        print(
            f"  {name:<40} median {statistics.median(values) * 1000:6.2f} ms   "
            f"max {max(values) * 1000:6.2f} ms   queries {statistics.median(queries[name]):.0f}"
        )
    for name, values in gaps.items():
        print(
            f"  {name:<40} median {statistics.median(values) * 1000:6.2f} ms   max {max(values) * 1000:6.2f} ms   "
            f"CPU median {statistics.median(cpu_gaps[name]) * 1000:6.2f} ms"
        )
    print(f"  thread hops from the request to its first delta: median {statistics.median(hops):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
