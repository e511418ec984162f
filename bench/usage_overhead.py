"""What counting provider calls (the usage app) adds to a chat turn: time to the first token and to the
saved reply, with the usage records on and off, interleaved, in one process, against the fake provider.

    .venv/bin/python bench/usage_overhead.py [--turns 40]

Runs whole turns through `chat.turn.agent.Turn` (the runner's path without a socket) on a scratch SQLite
database; every other turn has the usage receivers disconnected, so both sides share the machine's load.
Prints median and p95 of each, and the machine's load: on a shared machine the figures compare only
within one run. The provider streams 20 chunks with its `usage`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup(var_dir: Path, provider_url: str) -> None:
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ["LLM_BACKEND"] = "openai"
    os.environ["OPENAI_BASE_URL"] = provider_url
    os.environ["OPENAI_API_KEY"] = "bench"
    os.environ["DJANGO_DEBUG"] = "1"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["CHAT_USER_TURNS_PER_MINUTE"] = "1000000"
    os.environ["CHAT_ADDRESS_TURNS_PER_MINUTE"] = "0"
    os.environ["MEMORY_EXTRACT_MIN_TURNS"] = "1000000"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


async def one_turn(user: Any) -> tuple[float, float]:
    from asgiref.sync import sync_to_async

    from chat.services import conversation_create
    from chat.turn.agent import Turn

    conversation = await sync_to_async(conversation_create)(user=user)
    started = time.perf_counter()
    turn = await Turn.begin(user=user, conversation=conversation, content="Tell me about quiet trains.")
    first = 0.0
    async for event in turn.events():
        if event.type == "delta" and not first:
            first = time.perf_counter() - started
    return first * 1000, (time.perf_counter() - started) * 1000


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40, help="turns on each side")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.fake_openai import FakeOpenAIServer, FakeResponse

    server = FakeOpenAIServer().start()
    server.responder = lambda body: FakeResponse(" ".join(f"w{i}" for i in range(20)))
    var_dir = Path(tempfile.mkdtemp(prefix="memora-usage-bench-"))
    try:
        setup(var_dir, server.base_url)
        from accounts.models import User
        from chat.llm import metering
        from usage.models import DailyUsage
        from usage.receivers import on_provider_used, on_reply_metered

        user = User.objects.create_user(username="bench-usage", password=None)
        before = os.getloadavg()
        sides: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
        for i in range(args.turns * 2 + 4):
            side = "on" if i % 2 == 0 else "off"
            if side == "off":
                metering.provider_used.disconnect(dispatch_uid="usage.on_provider_used")
                metering.reply_metered.disconnect(dispatch_uid="usage.on_reply_metered")
            timing = asyncio.run(one_turn(user))
            metering.provider_used.connect(on_provider_used, dispatch_uid="usage.on_provider_used")
            metering.reply_metered.connect(on_reply_metered, dispatch_uid="usage.on_reply_metered")
            if i >= 4:  # the first turns warm caches and connections
                sides[side].append(timing)
        after = os.getloadavg()
        print(f"CPUs {os.cpu_count()}, load average before {before[0]:.2f}, after {after[0]:.2f}")
        for side, timings in sides.items():
            firsts, ends = [t[0] for t in timings], [t[1] for t in timings]
            print(
                f"usage records {side:>3}: first token median {statistics.median(firsts):6.1f} ms, "
                f"p95 {p95(firsts):6.1f} ms; saved reply median {statistics.median(ends):6.1f} ms, "
                f"p95 {p95(ends):6.1f} ms"
            )
        recorded = sum(row.calls for row in DailyUsage.objects.all())
        print(f"usage rows written: {DailyUsage.objects.count()} (turns recorded: {recorded})")
    finally:
        server.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
