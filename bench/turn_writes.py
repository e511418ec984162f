"""A turn's write work as a user's history grows: 1,000 against 200,000 messages, on SQLite.

    .venv/bin/python bench/turn_writes.py [--rounds 60] [--sizes 1000,200000]

For each size, a scratch SQLite database holds one user with that many messages (half theirs, half
replies, a few still pending), then turns run through the real chat services with no model:
`turn_start` (the user's message saved, the conversation locked) and `turn_finish` (the reply saved,
the post-turn memory hook and its pending count). Prints the CPU time of each turn (this thread's, so the
machine's other load weighs less) and its wall time, median and p95, with the machine's load. Target:
the median at 200,000 within 20 % of the one at 1,000. No model or provider is involved, so there is no
"provider alone" to print beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup(var_dir: Path) -> None:
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ["LLM_BACKEND"] = "demo"
    os.environ["DJANGO_DEBUG"] = "1"  # a development run, as `make run`: no secret key needed
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["CHAT_USER_TURNS_PER_MINUTE"] = "1000000"
    os.environ["CHAT_ADDRESS_TURNS_PER_MINUTE"] = "0"
    os.environ["MEMORY_EXTRACT_MIN_TURNS"] = "1000000"  # the count runs on every turn; no task is sent
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def history(size: int) -> tuple[Any, Any]:
    """A user with `size` messages over 50 conversations (the newest few pending); their newest conversation."""
    from accounts.models import User
    from chat.models import AgentState, Conversation, Message

    user = User.objects.create_user(username="bench-history", password=None)
    conversations = Conversation.objects.bulk_create([Conversation(owner=user, title=f"C{i}") for i in range(50)])
    AgentState.objects.bulk_create([AgentState(conversation=c) for c in conversations])
    batch: list[Message] = []
    for i in range(size):
        user_role = i % 2 == 0
        batch.append(
            Message(
                conversation=conversations[i * 50 // size],
                user=user,
                role="user" if user_role else "assistant",
                content=f"Message {i} about phones, trips and recipes.",
                status="complete",
                memory_status=("pending" if i >= size - 4 else "processed") if user_role else "",
            )
        )
        if len(batch) == 5000:
            Message.objects.bulk_create(batch)
            batch = []
    Message.objects.bulk_create(batch)
    return user, conversations[-1]


def turns(user: Any, conversation: Any, rounds: int) -> tuple[list[float], list[float]]:
    from chat.turn import transactions

    cpu: list[float] = []
    wall: list[float] = []
    for i in range(rounds + 5):
        t0, c0 = time.perf_counter(), time.thread_time()
        started = transactions.turn_start(user=user, conversation=conversation, content=f"One more question {i}?")
        reply = [{"role": "assistant", "content": "A reply."}]
        transactions.turn_finish(turn=started, status="complete", content="A reply.", new_items=reply)
        if i >= 5:  # the first few warm the caches
            cpu.append((time.thread_time() - c0) * 1000)
            wall.append((time.perf_counter() - t0) * 1000)
    return cpu, wall


def figure(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"median {statistics.median(ordered):5.2f} ms, p95 {ordered[int(0.95 * (len(ordered) - 1))]:5.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--sizes", default="1000,200000")
    args = parser.parse_args()
    medians: dict[int, float] = {}
    print(f"A turn's write work on SQLite ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start)")
    for size in (int(s) for s in args.sizes.split(",")):
        var_dir = Path(tempfile.mkdtemp(prefix="memora-bench-writes-"))
        try:
            # Each size in its own process would be cleaner; one database per size is enough here.
            os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
            if "django" not in sys.modules:
                setup(var_dir)
            else:
                from django.core.management import call_command
                from django.db import connections

                connections.close_all()
                connections["default"].settings_dict["NAME"] = str(var_dir / "bench.sqlite3")
                call_command("migrate", verbosity=0)
            user, conversation = history(size)
            cpu, wall = turns(user, conversation, args.rounds)
            medians[size] = statistics.median(cpu)
            print(f"  {size:>7,} messages: CPU {figure(cpu)}; wall {figure(wall)}", flush=True)
        finally:
            shutil.rmtree(var_dir, ignore_errors=True)
    if len(medians) >= 2:
        sizes = sorted(medians)
        ratio = medians[sizes[-1]] / medians[sizes[0]]
        verdict = "ok" if ratio <= 1.2 else "MISSED"
        print(f"  [{verdict}] median CPU at {sizes[-1]:,} is {ratio:.2f}× the one at {sizes[0]:,} (target ≤ 1.20×)")
    print(f"  load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
