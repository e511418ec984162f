"""Download all my data for a large account: time and peak memory of the streamed export (SPEC §8).

    .venv/bin/python bench/export.py [--messages 50000] [--conversations 100] [--memories 300]

Builds one account on a scratch SQLite database (messages of about 200 characters, half user, half
assistant, in `--conversations` conversations; memories with sources), then writes its export
(accounts.export.chunks, what GET /api/me/export streams) to a sink that only counts bytes:
- once for the time (and the documents' size),
- once under tracemalloc for the peak of Python memory allocated while exporting, against the size of
  the document: a streamed export stays far below it, one held whole would be above it, twice.
Prints the machine and its load. Bounded: about half a minute at the defaults here.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "I keep my bicycle in the hallway and ride to work along the river when it is not raining; "
    "在下雨的时候我坐地铁去公司，路上大概要四十分钟，我会听播客或者看书。 What else should I pack for the trip?"
)


def setup_django(var_dir: Path) -> None:
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(*, messages: int, conversations: int, memories: int) -> object:
    from accounts.models import User
    from chat.models import AgentState, Conversation, Message
    from memory.models import Memory, MemorySource

    user = User.objects.create_user("bench", password="bench-password")
    convs = Conversation.objects.bulk_create(
        [Conversation(owner=user, title=f"Trip {n}") for n in range(conversations)]
    )
    AgentState.objects.bulk_create([AgentState(conversation=c) for c in convs])
    per = messages // conversations
    first_ids: list[int] = []
    for conversation in convs:
        rows = [
            Message(conversation=conversation, user=user, role="user" if i % 2 == 0 else "assistant", content=TEXT)
            for i in range(per)
        ]
        created = Message.objects.bulk_create(rows, batch_size=2000)
        first_ids.append(created[0].pk)
    mems = Memory.objects.bulk_create(
        [Memory(owner=user, content=f"Fact number {n} about the trip.") for n in range(memories)]
    )
    MemorySource.objects.bulk_create(
        [MemorySource(memory=m, message_id=first_ids[n % len(first_ids)]) for n, m in enumerate(mems)]
    )
    return user


def export_once(user: object) -> tuple[float, int, int]:
    from accounts import export

    started = time.perf_counter()
    size = pieces = 0
    for piece in export.chunks(user):  # type: ignore[arg-type]
        size += len(piece.encode())
        pieces += 1
    return time.perf_counter() - started, size, pieces


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--memories", type=int, default=300)
    args = parser.parse_args()
    load = os.getloadavg()
    print(
        f"Machine: {platform.machine()} {platform.system()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as var_dir:
        setup_django(Path(var_dir))
        started = time.perf_counter()
        user = build(messages=args.messages, conversations=args.conversations, memories=args.memories)
        print(
            f"Built an account of {args.messages:,} messages in {args.conversations} conversations and "
            f"{args.memories} memories in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        seconds, size, pieces = export_once(user)
        print(f"Export: {size / 1e6:.1f} MB in {pieces} pieces, {seconds:.2f} s ({size / 1e6 / seconds:.1f} MB/s)")
        tracemalloc.start()
        export_once(user)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"Peak Python memory while exporting: {peak / 1e6:.1f} MB "
            f"({peak / size:.0%} of the document's {size / 1e6:.1f} MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
