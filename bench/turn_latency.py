"""Turn latency and streaming throughput of the chat, against a local fake OpenAI-compatible provider.

    .venv/bin/python bench/turn_latency.py [--turns 30] [--streams 50] [--tokens 200] [--token-delay 0.02]
    .venv/bin/python bench/turn_latency.py --database-url postgres://…/NAME --redis-url redis://…/DB \
        --web-processes 2 --streams 200

Starts the fake provider (bench/fake_provider.py: tests.fake_openai's replies from one event loop) and
the app exactly as `make run` does: `manage.py migrate`, `manage.py ensure_demo_user`, then
`scripts/serve.py` (uvicorn and a Celery worker) with the environment `make run` would have, plus the
provider's address. By default that is the embedded
configuration (a scratch SQLite file, in-memory channel layer, filesystem broker); with
`--database-url` and `--redis-url` it is PostgreSQL + Redis (use a database and a Redis db of your
own: the bench writes users into them), and `--web-processes N` runs the production command
`scripts/serve.py --workers N`. Then it measures:

1. Added latency, one turn at a time: time to the first token and to the end of the reply through
   the WebSocket (what the browser uses) and through the API (server-sent events), minus the same
   times when calling the fake provider directly with the `openai` package, in the same run. Median
   and p95.
2. Concurrency: N conversations of N different users stream a reply at once (WebSocket and API):
   errors, first-token times, and each stream's token rate (tokens after the first / time from first
   to last token) compared with the provider's own rate measured the same way with N direct streams.

With `--fresh-burst N`, before anything else reaches the server, N users each open a chat page and
send a message at once, on the freshly started process; then N other users do the same once it has
served them and a few turns more: time to the first token (median, p95, max) of the fresh burst and of
the warm one, beside N direct streams to the provider, and how long the pages took to connect. A
server whose first turns wait for one-time work (imports, a model's load, the first of anything) shows
it as a fresh burst slower than the warm one. `--fresh-burst-only` stops there.

With `--memories N` part 1 also runs WebSocket turns of a user holding N memories (the recall golden
set's, memory/evals/recall.yaml) about something they remember, interleaved with the others: the added
first-token time of choosing and recording the turn's memories, beside a user with none and the
provider alone, in one run.

The machine (CPUs, load average before and after) is printed with the figures: on a shared machine
they are only comparable within one run. Everything it starts is stopped at the end, and the whole run
is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.processes import free_port, stop, wait_for_port  # noqa: E402

PYTHON = sys.executable
PORTS = range(18340, 18399)
DEADLINE_SECONDS = 600


# --- set-up through the ORM (same database file as the server) -------------------------------------


@dataclass
class Account:
    session: str
    token: str
    conversation: str


def make_accounts(count: int, prefix: str) -> list[Account]:
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    from accounts.models import User
    from accounts.services import api_token_create
    from chat.services import conversation_create

    accounts = []
    for i in range(count):
        user = User.objects.create_user(username=f"{prefix}{i}", password=None)  # force_login needs none
        client = Client()
        client.force_login(user)
        _, token = api_token_create(user=user)
        conversation = conversation_create(user=user, title=f"Bench {i}")
        accounts.append(Account(client.cookies[settings.SESSION_COOKIE_NAME].value, token, str(conversation.pk)))
    return accounts


def add_memories(account: Account, count: int) -> None:
    """Give the account's user `count` memories: the recall golden set's user of that size."""
    from chat.models import Conversation
    from memory.embeddings import memory_vectors_make
    from memory.evals.recall_set import load, user_memories
    from memory.models import Memory

    owner = Conversation.objects.get(pk=account.conversation).owner
    memories, _ = user_memories(load(), count)
    Memory.objects.bulk_create([Memory(owner=owner, content=m.content, pinned=m.pinned, key=m.key) for m in memories])
    memory_vectors_make(user_id=owner.pk)  # as the worker would after the writes (none with EMBEDDING_MODEL=off)


# --- one streamed turn, three ways ------------------------------------------------------------------


@dataclass
class Timing:
    first: float = 0.0  # seconds to the first token
    total: float = 0.0  # seconds to the end of the reply (for the app: the saved message received)
    tokens: int = 0
    error: str = ""
    rate: float = 0.0  # tokens/s from the first to the last token

    def finish(self, t0: float, t_first: float, t_last_token: float, t_end: float) -> Timing:
        self.first, self.total = t_first - t0, t_end - t0
        if self.tokens > 1 and t_last_token > t_first:
            self.rate = (self.tokens - 1) / (t_last_token - t_first)
        return self


WORD = re.compile(r"word\d+")
DELTA = re.compile(r'hx-swap-oob="beforeend:#message-\d+-text">(.*?)</span>', re.S)  # see chat.consumers


def direct_client(provider_url: str, connections: int) -> Any:
    """The baseline: the same `openai` package the app uses, with a warm connection pool like the app's."""
    import httpx2 as httpx
    import openai

    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    http = openai.DefaultAsyncHttpxClient(limits=limits, timeout=120)
    return openai.AsyncOpenAI(base_url=provider_url, api_key="bench", max_retries=0, http_client=http)


async def turn_direct(client: Any, prompt: str) -> Timing:
    """A streamed completion read as the app reads it (chat/llm/openai_adapter.py): the raw response's
    lines, parsed as JSON, rather than the SDK's typed chunks, which cost the client more CPU than the
    provider spends writing them."""
    timing, t_first, t_last = Timing(), 0.0, 0.0
    t0 = time.perf_counter()
    try:
        completions = client.chat.completions.with_streaming_response
        messages = [{"role": "user", "content": prompt}]
        async with completions.create(model="bench", messages=messages, stream=True) as response:
            async for line in response.iter_lines():
                if not line.startswith("data: {"):
                    continue
                choices = json.loads(line[6:]).get("choices") or [{}]
                if (choices[0].get("delta") or {}).get("content"):
                    timing.tokens += 1
                    t_last = time.perf_counter()
                    t_first = t_first or t_last
        return timing.finish(t0, t_first, t_last, time.perf_counter())
    except Exception as exc:
        timing.error = repr(exc)
        return timing


def ws_url(base: str, account: Account) -> str:
    return base.replace("http://", "ws://") + f"/ws/c/{account.conversation}/"


def ws_headers(base: str, account: Account) -> dict[str, str]:
    return {"Origin": base, "Cookie": f"sessionid={account.session}"}


async def new_conversation(client: Any, account: Account) -> str:
    response = await client.post("/api/conversations", json={}, headers={"Authorization": f"Bearer {account.token}"})
    response.raise_for_status()
    return str(response.json()["id"])


def open_page(base: str, account: Account) -> Any:
    """A chat page's socket. No keepalive pings: with hundreds of sockets in this one process, a late
    pong is the benchmark's own lag, not the server's."""
    from websockets.asyncio.client import connect

    return connect(ws_url(base, account), additional_headers=ws_headers(base, account), ping_interval=None)


async def page_live(ws: Any) -> None:
    """Wait for what a freshly opened chat page is sent first: that it is live (chat.consumers.connect)."""
    while 'id="turn-live"' not in await asyncio.wait_for(ws.recv(), timeout=60):
        pass


async def turn_websocket(base: str, account: Account, prompt: str, socket_: Any = None) -> Timing:
    timing, t_first, t_last = Timing(), 0.0, 0.0
    try:
        async with contextlib.AsyncExitStack() as stack:
            ws = socket_ or await stack.enter_async_context(open_page(base, account))
            t0 = time.perf_counter()
            await ws.send(json.dumps({"action": "send", "content": prompt}))
            while True:
                frame = await asyncio.wait_for(ws.recv(), timeout=60)
                deltas = DELTA.findall(frame)
                if deltas:
                    timing.tokens += sum(len(WORD.findall(delta)) for delta in deltas)
                    t_last = time.perf_counter()
                    t_first = t_first or t_last
                if 'role="alert"' in frame or 'data-state="rejected"' in frame:
                    timing.error = re.sub(r"<[^>]+>", " ", frame).strip()[:120]
                    return timing
                if 'data-state="idle"' in frame:
                    if 'data-status="complete"' not in frame:
                        timing.error = "reply not complete"
                    return timing.finish(t0, t_first, t_last, time.perf_counter())
    except Exception as exc:
        timing.error = repr(exc)
        return timing


async def turn_api(client: Any, account: Account, prompt: str) -> Timing:
    timing, t_first, t_last = Timing(), 0.0, 0.0
    url = f"/api/conversations/{account.conversation}/messages"
    headers = {"Authorization": f"Bearer {account.token}", "Accept": "text/event-stream"}
    t0 = time.perf_counter()
    try:
        async with client.stream("POST", url, json={"content": prompt}, headers=headers) as response:
            if response.status_code != 200:
                timing.error = f"HTTP {response.status_code}"
                return timing
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "delta":
                    timing.tokens += len(WORD.findall(line))
                    t_last = time.perf_counter()
                    t_first = t_first or t_last
                elif line.startswith("data: ") and event == "error":
                    timing.error = line[6:120]
            return timing.finish(t0, t_first, t_last, time.perf_counter())
    except Exception as exc:
        timing.error = repr(exc)
        return timing


# --- reporting ------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


@dataclass
class Results:
    rows: dict[str, list[Timing]] = field(default_factory=dict)


def report_latency(direct: list[Timing], path: str, timings: list[Timing]) -> dict[str, float]:
    errors = [t for t in timings if t.error]
    ok = [t for t in timings if not t.error]
    # Pair each turn with the direct turn run just before it, so drift affects both alike.
    added_first = [t.first - d.first for t, d in zip(timings, direct, strict=True) if not t.error]
    added_total = [t.total - d.total for t, d in zip(timings, direct, strict=True) if not t.error]
    figures = {
        "first_median": statistics.median(added_first) if ok else float("nan"),
        "first_p95": percentile(added_first, 0.95),
        "total_median": statistics.median(added_total) if ok else float("nan"),
        "total_p95": percentile(added_total, 0.95),
    }
    print(
        f"  {path:<10} added to first token: median {ms(figures['first_median'])}, p95 {ms(figures['first_p95'])}"
        f"   added to completion: median {ms(figures['total_median'])}, p95 {ms(figures['total_p95'])}"
        f"   errors: {len(errors)}"
    )
    for t in errors[:3]:
        print(f"    error: {t.error}")
    return figures


def report_concurrency(
    label: str, timings: list[Timing], provider_rate: float, expected_tokens: int
) -> dict[str, float]:
    errors = [t for t in timings if t.error or t.tokens != expected_tokens]
    rates = [t.rate for t in timings if not t.error and t.rate]
    firsts = [t.first for t in timings if not t.error and t.tokens]
    median_rate = statistics.median(rates) if rates else 0.0
    figures = {
        "errors": len(errors),
        "rate_median": median_rate,
        "rate_min": min(rates) if rates else 0.0,
        "ratio": median_rate / provider_rate if provider_rate else 0.0,
        "first_median": statistics.median(firsts or [float("nan")]),
        "first_p95": percentile(firsts, 0.95),
    }
    print(
        f"  {label:<10} errors {figures['errors']:>2}/{len(timings)}"
        f"   per-stream rate: median {median_rate:6.1f} tok/s,"
        f" min {figures['rate_min']:6.1f} tok/s = {figures['ratio'] * 100:5.1f}% of the provider's"
        f"   first token: median {ms(figures['first_median'])}, p95 {ms(figures['first_p95'])}"
    )
    for t in errors[:3]:
        print(f"    error: {t.error or f'{t.tokens} tokens'}")
    return figures


# --- the benchmark -------------------------------------------------------------------------------------


async def ws_turn(client: Any, base: str, account: Account, prompt: str) -> Timing:
    from websockets.asyncio.client import connect

    # The socket is opened before the clock starts, as the page opens it when it loads.
    conversation = await new_conversation(client, account)
    fresh = Account(account.session, account.token, conversation)
    async with connect(ws_url(base, fresh), additional_headers=ws_headers(base, fresh)) as ws:
        return await turn_websocket(base, fresh, prompt, ws)


async def api_turn(client: Any, account: Account, prompt: str) -> Timing:
    conversation = await new_conversation(client, account)
    return await turn_api(client, Account(account.session, account.token, conversation), prompt)


async def one_turn_at_a_time(
    args: argparse.Namespace,
    base: str,
    client: Any,
    provider: Any,
    accounts: tuple[Account, Account, Account | None],
    latency_prompt: str,
) -> tuple[dict[str, float], dict[str, float]]:
    """Part 1: each turn the first of a new conversation, by WebSocket and by API, beside the provider alone."""
    ws_account, api_account, memory_account = accounts
    # A message about things the user with memories has told Memora (their cat, their phone); each turn's
    # words differ, so none is served from the vectors kept by text (memory.embeddings).
    questions = iter(range(1_000_000))

    def memory_prompt() -> str:
        return f"{latency_prompt} my cat and my phone, question {next(questions)}"

    for _ in range(3):  # warm up: imports, connection pools, template caches
        await turn_direct(provider, latency_prompt)
        await ws_turn(client, base, ws_account, latency_prompt)
        await api_turn(client, api_account, latency_prompt)
        if memory_account is not None:
            await ws_turn(client, base, memory_account, memory_prompt())
    direct_ws, direct_api, ws_timings, api_timings = [], [], [], []
    direct_memory, memory_timings = [], []
    for _ in range(args.turns):
        direct_ws.append(await turn_direct(provider, latency_prompt))
        ws_timings.append(await ws_turn(client, base, ws_account, latency_prompt))
        direct_api.append(await turn_direct(provider, latency_prompt))
        api_timings.append(await api_turn(client, api_account, latency_prompt))
        if memory_account is not None:
            direct_memory.append(await turn_direct(provider, latency_prompt))
            memory_timings.append(await ws_turn(client, base, memory_account, memory_prompt()))
    direct_first = statistics.median([t.first for t in direct_ws + direct_api])
    direct_total = statistics.median([t.total for t in direct_ws + direct_api])
    print(f"  direct     first token: median {ms(direct_first)}   completion: median {ms(direct_total)}")
    ws_fig = report_latency(direct_ws, "WebSocket", ws_timings)
    api_fig = report_latency(direct_api, "API (SSE)", api_timings)
    if memory_account is not None:
        report_latency(direct_memory, f"WebSocket, a user with {args.memories} memories", memory_timings)
    return ws_fig, api_fig


async def deep_in_one_conversation(
    args: argparse.Namespace, base: str, provider: Any, ws_account: Account, latency_prompt: str
) -> None:
    from websockets.asyncio.client import connect

    # The same, deep into one conversation: the model input grows with the context.
    long_direct, long_ws = [], []
    async with connect(ws_url(base, ws_account), additional_headers=ws_headers(base, ws_account)) as ws:
        for i in range(args.long_turns):
            direct_timing = await turn_direct(provider, latency_prompt)
            ws_timing = await turn_websocket(base, ws_account, latency_prompt, ws)
            if i >= args.long_turns - 10:
                long_direct.append(direct_timing)
                long_ws.append(ws_timing)
    report_latency(
        long_direct, f"WebSocket, turns {args.long_turns - 9}-{args.long_turns} of one conversation", long_ws
    )


async def all_at_once(
    args: argparse.Namespace, base: str, client: Any, provider: Any, load_accounts: list[Account], load_prompt: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Part 2: N users stream a reply at once, by WebSocket then by API, beside N direct streams."""
    n = args.streams
    print(
        f"\n2. {n} conversations of {n} users streaming at once ({args.tokens}-token replies, "
        f"{args.token_delay * 1000:.0f} ms between tokens = {1 / args.token_delay:.0f} tok/s from the provider)"
    )
    direct_load = list(await asyncio.gather(*[turn_direct(provider, load_prompt) for _ in range(n)]))
    provider_rate = statistics.median([t.rate for t in direct_load if t.rate] or [0.0])
    report_concurrency("direct", direct_load, provider_rate, args.tokens)
    # Every user has the conversation open (its socket is connected and the page shows it live), then
    # all press Enter together.
    async with contextlib.AsyncExitStack() as pages:
        t0 = time.perf_counter()
        sockets = await asyncio.gather(*[pages.enter_async_context(open_page(base, a)) for a in load_accounts[:n]])
        await asyncio.gather(*[page_live(ws) for ws in sockets])
        print(f"  {n} chat pages connected and live in {ms(time.perf_counter() - t0)}")
        turns = [turn_websocket(base, a, load_prompt, ws) for a, ws in zip(load_accounts[:n], sockets, strict=True)]
        ws_load = list(await asyncio.gather(*turns))
    ws_conc = report_concurrency("WebSocket", ws_load, provider_rate, args.tokens)
    # Fresh conversations: a WebSocket turn whose socket failed above may still be finishing.
    fresh = [Account(a.session, a.token, await new_conversation(client, a)) for a in load_accounts[:n]]
    api_load = list(await asyncio.gather(*[turn_api(client, a, load_prompt) for a in fresh]))
    api_conc = report_concurrency("API (SSE)", api_load, provider_rate, args.tokens)
    return ws_conc, api_conc


async def one_burst(base: str, accounts: list[Account], prompt: str) -> tuple[list[Timing], float]:
    """Every user opens their conversation's page at once, then all send together as soon as all are
    live: each turn's times, and the seconds the pages took to be live."""
    async with contextlib.AsyncExitStack() as pages:
        t0 = time.perf_counter()
        sockets = await asyncio.gather(*[pages.enter_async_context(open_page(base, a)) for a in accounts])
        await asyncio.gather(*[page_live(ws) for ws in sockets])
        connected = time.perf_counter() - t0
        turns = [turn_websocket(base, a, prompt, ws) for a, ws in zip(accounts, sockets, strict=True)]
        return list(await asyncio.gather(*turns)), connected


def report_burst(label: str, timings: list[Timing], connected: float | None = None) -> dict[str, float]:
    errors = [t for t in timings if t.error]
    firsts = [t.first for t in timings if not t.error and t.tokens]
    figures = {
        "errors": len(errors),
        "first_median": statistics.median(firsts or [float("nan")]),
        "first_p95": percentile(firsts, 0.95),
        "first_max": max(firsts or [float("nan")]),
    }
    pages = f"   pages live in {ms(connected)}" if connected is not None else ""
    print(
        f"  {label:<16} errors {figures['errors']:>2}/{len(timings)}"
        f"   first token: median {ms(figures['first_median'])}, p95 {ms(figures['first_p95'])},"
        f" max {ms(figures['first_max'])}{pages}"
    )
    for t in errors[:3]:
        print(f"    error: {t.error}")
    return figures


async def fresh_then_warm(
    args: argparse.Namespace,
    base: str,
    client: Any,
    provider: Any,
    fresh_accounts: list[Account],
    warm_accounts: list[Account],
    prompt: str,
) -> None:
    """Part 0: a burst of N turns of N users as the server's very first requests, then the same burst of
    N other users once the server is warm, beside N direct streams, in one run (the load drifts)."""
    n = len(fresh_accounts)
    print(
        f"\n0. A burst of {n} WebSocket turns of {n} users on the freshly started server, then the same once warm"
        f" ({args.latency_tokens}-token replies)\nmachine: {machine()} (before the fresh burst)"
    )
    fresh, fresh_connected = await one_burst(base, fresh_accounts, prompt)
    # Warm: the burst above, then a few turns one at a time; each burst's users are new to the server.
    for _ in range(3):
        await ws_turn(client, base, fresh_accounts[0], prompt)
    direct = list(await asyncio.gather(*[turn_direct(provider, prompt) for _ in range(n)]))
    warm, warm_connected = await one_burst(base, warm_accounts, prompt)
    report_burst("direct", direct)
    report_burst("fresh server", fresh, fresh_connected)
    report_burst("warm server", warm, warm_connected)
    print(f"machine: {machine()} (after the warm burst)")


def targets_met(
    n: int, ws_fig: dict[str, float], api_fig: dict[str, float], ws_conc: dict[str, float], api_conc: dict[str, float]
) -> bool:
    checks = [
        ("median added latency to first token ≤ 10 ms (WebSocket)", ws_fig["first_median"] <= 0.010),
        ("p95 added latency to first token ≤ 50 ms (WebSocket)", ws_fig["first_p95"] <= 0.050),
        ("median added latency to first token ≤ 10 ms (API)", api_fig["first_median"] <= 0.010),
        ("p95 added latency to first token ≤ 50 ms (API)", api_fig["first_p95"] <= 0.050),
        (f"{n} concurrent streams, zero errors (WebSocket)", ws_conc["errors"] == 0),
        (f"{n} concurrent streams ≥ 90% of the provider's token rate (WebSocket)", ws_conc["ratio"] >= 0.9),
        (f"{n} concurrent streams, zero errors (API)", api_conc["errors"] == 0),
        (f"{n} concurrent streams ≥ 90% of the provider's token rate (API)", api_conc["ratio"] >= 0.9),
        (f"{n} concurrent streams, first token p95 ≤ 1 s (WebSocket)", ws_conc["first_p95"] <= 1.0),
        (f"{n} concurrent streams, first token p95 ≤ 1 s (API)", api_conc["first_p95"] <= 1.0),
    ]
    print("\nTargets")
    for name, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {name}")
    return all(ok for _, ok in checks)


async def run(args: argparse.Namespace, base: str, provider_url: str, accounts: list[Account]) -> bool:
    import httpx2 as httpx

    latency_prompt = f"bench tokens={args.latency_tokens} delay={args.latency_delay}"
    memory_account = accounts.pop() if args.memories else None
    burst_accounts = [accounts.pop() for _ in range(2 * args.fresh_burst)]
    ws_account, api_account, *load_accounts = accounts
    limits = httpx.Limits(max_connections=args.streams + 10, max_keepalive_connections=args.streams + 10)
    provider = direct_client(provider_url, max(args.streams, args.fresh_burst) + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client, provider:
        if args.fresh_burst:
            fresh, warm = burst_accounts[: args.fresh_burst], burst_accounts[args.fresh_burst :]
            await fresh_then_warm(args, base, client, provider, fresh, warm, latency_prompt)
            if args.fresh_burst_only:
                return True
        return await the_rest(args, base, client, provider, (ws_account, api_account, memory_account, load_accounts))


async def the_rest(args: argparse.Namespace, base: str, client: Any, provider: Any, accounts: tuple[Any, ...]) -> bool:
    """Parts 1 and 2, and the targets."""
    ws_account, api_account, memory_account, load_accounts = accounts
    latency_prompt = f"bench tokens={args.latency_tokens} delay={args.latency_delay}"
    load_prompt = f"bench tokens={args.tokens} delay={args.token_delay}"
    print(
        f"\n1. One turn at a time ({args.turns} turns per path, each the first of a new conversation; "
        f"{args.latency_tokens}-token replies, {args.latency_delay * 1000:.0f} ms between tokens)"
    )
    turn_accounts = (ws_account, api_account, memory_account)
    ws_fig, api_fig = await one_turn_at_a_time(args, base, client, provider, turn_accounts, latency_prompt)
    await deep_in_one_conversation(args, base, provider, ws_account, latency_prompt)
    ws_conc, api_conc = await all_at_once(args, base, client, provider, load_accounts, load_prompt)
    return targets_met(args.streams, ws_fig, api_fig, ws_conc, api_conc)


def machine() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30, help="turns per path in the latency part")
    parser.add_argument("--latency-tokens", type=int, default=20)
    parser.add_argument("--latency-delay", type=float, default=0.005)
    parser.add_argument("--long-turns", type=int, default=30, help="turns in one conversation, to show context growth")
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--token-delay", type=float, default=0.02)
    parser.add_argument("--database-url", default="", help="PostgreSQL (a database of your own); needs --redis-url")
    parser.add_argument("--redis-url", default="", help="Redis (a db number of your own)")
    parser.add_argument("--web-processes", type=int, default=1, help="scripts/serve.py --workers N")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--missed-ok", action="store_true", help="exit 0 when targets are missed (make bench)")
    parser.add_argument("--memories", type=int, default=0, help="also time turns of a user with this many memories")
    parser.add_argument(
        "--fresh-burst", type=int, default=0, metavar="N",
        help="first, N turns of N users at once on the fresh server, then again once warm",
    )  # fmt: skip
    parser.add_argument("--fresh-burst-only", action="store_true", help="stop after the --fresh-burst part")
    args = parser.parse_args()
    if bool(args.database_url) != bool(args.redis_url):
        parser.error("--database-url and --redis-url go together (PostgreSQL + Redis)")
    counts = ("turns", "latency_tokens", "long_turns", "streams", "tokens", "memories", "fresh_burst")
    for name in counts:
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} is a count: 0 or more")
    if args.turns < 1 or args.streams < 1 or args.web_processes < 1:
        parser.error("--turns, --streams and --web-processes need at least 1")
    if args.latency_delay < 0 or args.token_delay < 0:
        parser.error("--latency-delay and --token-delay are seconds: 0 or more")

    scratch = Path(tempfile.mkdtemp(prefix="memora-bench-"))
    # What `make run` sees on a fresh clone, plus the provider: no service URLs unless asked for.
    drop = {"DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "DJANGO_DEBUG", "LLM_BACKEND", "WEB_CONCURRENCY"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    provider_port = free_port(PORTS)
    app_port = free_port(PORTS, exclude={provider_port})
    provider_url = f"http://127.0.0.1:{provider_port}/v1"
    env.update(
        MEMORA_VAR_DIR=str(scratch), DJANGO_SETTINGS_MODULE="config.settings", PORT=str(app_port),
        OPENAI_BASE_URL=provider_url, OPENAI_API_KEY="bench", CHAT_MODEL="bench", PYTHONPATH=str(ROOT),
        # The benchmark sends more turns per user and minute than a person would.
        CHAT_USER_TURNS_PER_MINUTE="100000",
        CHAT_ADDRESS_TURNS_PER_MINUTE="0",  # every simulated user comes from 127.0.0.1
        DJANGO_DEBUG="1",  # as the Makefile's run target sets it
    )  # fmt: skip
    if args.database_url:
        # The documented production command (docs/configuration.md, "Production: more than one process"): debug off, a
        # secret key, a connection pool per process.
        env.pop("DJANGO_DEBUG")
        env.update(
            DATABASE_URL=args.database_url, REDIS_URL=args.redis_url, DATABASE_POOL="1",
            # Web and worker processes × pool size below PostgreSQL's 100 connections, as docs/configuration.md advises.
            DATABASE_POOL_MAX_SIZE="12",
            DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        )  # fmt: skip
    os.environ.clear()
    os.environ.update(env, LOG_LEVEL="WARNING")  # this process only: the server logs as `make run` does

    processes: list[subprocess.Popen[bytes]] = []
    log_path = scratch / "server.log"
    log = log_path.open("wb")
    try:
        for command in (["migrate", "--noinput", "-v0"], ["ensure_demo_user"]):
            subprocess.run([PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        provider = subprocess.Popen(
            [PYTHON, "bench/fake_provider.py", str(provider_port), str(DEADLINE_SECONDS)], cwd=ROOT, env=env
        )
        processes.append(provider)
        serve = [PYTHON, "scripts/serve.py"]
        if args.web_processes > 1:
            serve += ["--workers", str(args.web_processes)]
        app = subprocess.Popen(serve, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        processes.append(app)
        extra = (1 if args.memories else 0) + 2 * args.fresh_burst
        accounts = make_accounts(2 + args.streams + extra, prefix=f"bench{os.getpid()}x")
        if args.memories:
            add_memories(accounts[-1], args.memories)  # the last: run() takes it first
        wait_for_port(provider_port, provider)
        wait_for_port(app_port, app, seconds=90, log=log_path)
        time.sleep(1.0 if args.web_processes > 1 else 0.2)  # every worker process listening
        services = "PostgreSQL + Redis" if args.database_url else "SQLite, in-memory channel layer, filesystem broker"
        print(
            f"Memora as {'the production command' if args.database_url else '`make run`'} starts it "
            f"(scripts/serve.py, {args.web_processes} web process(es); {services})"
            f" · fake provider at {provider_url} · Python {sys.version.split()[0]}\n"
            f"machine: {machine()} (before)"
        )
        ok = asyncio.run(
            asyncio.wait_for(run(args, f"http://127.0.0.1:{app_port}", provider_url, accounts), DEADLINE_SECONDS)
        )
        print(f"machine: {machine()} (after)")
        return 0 if ok or args.missed_ok else 1
    finally:
        for process in reversed(processes):
            stop(process, seconds=20)
        log.close()
        if args.keep:
            print(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
