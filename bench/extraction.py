"""Memory extraction figures, on a scratch SQLite database with the offline demo model as the judge.

    .venv/bin/python bench/extraction.py [--rounds 5]

Prints:

1. Judge calls and characters sent to the judge per 100 user messages in background mode, at 20 and 500
   memories on a 4,096-token judge window (and 500 on 32,000): 100 turns over an afternoon through the real
   chat services (turn_start / turn_finish), the post-turn hook, and each task run when its countdown
   (the wait for quiet) is over, on the pipeline's clock. Then the judge prompt's size, the background
   judge calls for a burst of 6 messages, when an idle user's messages are due for the sweep, and the memory
   characters a greeting carries.
2. Database queries per extraction run, for 10 memories + 3 messages and 200 memories + 40 messages.
3. Time to build the memory block with 200 active memories, for a message some of them bear on.
4. End-to-end latency from a turn's commit to the memory row: a real `celery -A config worker`
   subprocess on the embedded filesystem broker, and on Redis when REDIS_URL is set.
5. Throughput: 1,000 users (`--users`) each holding a backlog of 3 pending messages; the pipeline runs
   once per user in one process, as one worker process's task would,
   with the instant demo judge, so the figure is the pipeline's own cost: batches per second per
   worker process, and the queries of every run (the same whoever the user is).

Everything it starts is stopped at the end, and the whole run is bounded in time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CELERY = str(Path(sys.executable).parent / "celery")
WORKER_BOOT_SECONDS = 60
ROUND_TIMEOUT_SECONDS = 30

PHONE_FLOW = [
    ("a", "I've always liked small phones, they're easy to use one-handed."),
    ("a", "Today I'm helping a friend pick a phone, his budget this time is 3000."),
    ("b", "I want a new phone, suggest a few."),
]
FILLER = [
    "What's a good laptop for travel?",
    "Thanks, and how heavy is it?",
    "Can you compare the two?",
    "I wear glasses.",
    "Which one has the better keyboard?",
    "I live in Lyon.",
    "What about battery life?",
]


def setup_django(var_dir: Path, *, redis_url: str = "") -> None:
    """Point settings at a scratch database and var dir, offline model; then migrate."""
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ["LLM_BACKEND"] = "demo"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["CHAT_USER_TURNS_PER_MINUTE"] = "1000000"  # a benchmark sends turns faster than anyone types
    os.environ["CHAT_ADDRESS_TURNS_PER_MINUTE"] = "0"  # and from one address
    # A development run, as `make run` is: no DJANGO_SECRET_KEY needed (the latency part's worker inherits it).
    os.environ["DJANGO_DEBUG"] = "1"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_user(name: str) -> Any:
    from accounts.models import User

    return User.objects.create_user(username=name, password=None)


def turn(user: Any, conversation: Any, text: str) -> Any:
    """One chat turn through the real services, without a model: start, then finish (commit → hook)."""
    from chat.turn import transactions

    started = transactions.turn_start(user=user, conversation=conversation, content=text)
    transactions.turn_finish(
        turn=started, status="complete", content="A reply.", new_items=[{"role": "assistant", "content": "A reply."}]
    )
    return started.user_message


# --- 1. judge calls per 100 user messages --------------------------------------------------------


TOPICS = ["chess", "sourdough", "kayaking", "pottery", "astronomy", "gardening", "sailing", "archery"]
PLACES = ["Oslo", "Porto", "Kyoto", "Quito", "Dakar", "Hanoi", "Lima", "Riga", "Tunis", "Perth"]
CHATTER = [
    "Can you suggest a weekend plan around {topic} near {place}?",
    "What gear do I need to start {topic}?",
    "How expensive is {topic} in {place}, roughly?",
    "Thanks, and what about the weather in {place} next month?",
    "Which book would you recommend on {topic}?",
    "ok, make it shorter",
    "Compare the two options for me.",
    "I wear glasses, does that matter for {topic}?",
]


class TaskClock:
    """Runs each task the post-turn hook sends when its countdown is over (a worker that is always free), on
    the pipeline's clock, moved along with the messages: the wait for quiet is what it is in production."""

    def __init__(self, start: Any) -> None:
        from memory import tasks
        from memory.extraction import clock

        self.now = start
        self.due: list[tuple[Any, tuple[int, int], dict[str, Any]]] = []
        tasks._send = self.record  # type: ignore[assignment]
        clock.now = lambda: self.now  # type: ignore[assignment]

    def record(
        self, user_id: int, message_id: int, min_pending: int | None, trigger: str, countdown: float = 0, **kw: Any
    ) -> None:
        from datetime import timedelta

        due = self.now + timedelta(seconds=countdown or 0)
        self.due.append((due, (user_id, message_id), {"min_pending": min_pending, "trigger": trigger}))

    def run_until(self, moment: Any) -> None:
        """Run the tasks due by `moment` (None: all of them), each at its own time."""
        from memory import tasks

        self.due.sort(key=lambda item: item[0])
        while self.due and (moment is None or self.due[0][0] <= moment):
            self.now, args, kwargs = self.due.pop(0)
            tasks.extract_memories_task.apply(args=args, kwargs=kwargs)

    def say(self, user: Any, conversation: Any, text: str, *, after: float) -> None:
        """A turn sent now, with the tasks due before it run first; then the clock moves `after` seconds."""
        from datetime import timedelta

        from chat.models import Message

        self.run_until(self.now)
        message = turn(user, conversation, text)
        Message.objects.filter(pk=message.pk).update(created_at=self.now)
        self.now += timedelta(seconds=after)


def judge_inputs(user: Any) -> list[Any]:
    from memory.models import ExtractionRun

    return list(ExtractionRun.objects.filter(owner=user).exclude(judge_input=[]).values_list("judge_input", flat=True))


def judge_calls_per_100(memories: int, window: int) -> tuple[int, int, int]:
    """Judge calls, characters sent to the judge and the most memories one request showed, for 100 user
    messages sent over an afternoon (sessions of 3 to 15 messages 15 to 45 s apart, pauses of 2 to 30
    minutes) by a user holding `memories` memories, on a judge window of `window` tokens (TaskClock)."""
    import random
    import re
    from datetime import timedelta

    from django.test import override_settings
    from django.utils import timezone

    from chat.services import conversation_create
    from memory.models import Memory

    tasks = TaskClock(timezone.now() - timedelta(days=2))
    user = make_user(f"bench-background-{memories}-{window}")
    texts = [f"Enjoys {TOPICS[i % 8]} trips, last one near {PLACES[i // 8 % 10]} (note {i})." for i in range(memories)]
    Memory.objects.bulk_create(Memory(owner=user, content=text, origin="added") for text in texts)
    conversations = [conversation_create(user=user) for _ in range(6)]
    rng = random.Random(37)
    sent = 0
    with override_settings(
        CHAT_CONTEXT_TOKENS=window, MEMORY_CONTEXT_TOKENS=0, MEMORY_MAX_ACTIVE=max(500, memories + 100)
    ):
        while sent < 100:
            conversation = rng.choice(conversations)
            for _ in range(min(rng.randint(3, 15), 100 - sent)):
                text = rng.choice(CHATTER).format(topic=rng.choice(TOPICS), place=rng.choice(PLACES))
                tasks.say(user, conversation, text, after=rng.randint(15, 45))
                sent += 1
            tasks.now += timedelta(minutes=rng.randint(2, 30))
        tasks.run_until(None)
    inputs = judge_inputs(user)
    characters = sum(len(m["content"]) for messages in inputs for m in messages)
    shown = max((len(re.findall(r"^\[\d+\]", messages[-1]["content"], re.M)) for messages in inputs), default=0)
    return len(inputs), characters, shown


def burst_and_idle() -> tuple[int, float]:
    """Background judge calls for a burst of 6 messages 10 s apart; and how long after an idle user's third
    message (then silence) their messages are due for the worker's sweep (memory.extraction.recovery)."""
    from datetime import timedelta

    from django.utils import timezone

    from chat.services import conversation_create
    from memory.extraction import recovery

    start = timezone.now() - timedelta(days=1)
    tasks = TaskClock(start)
    user = make_user("bench-burst")
    conversation = conversation_create(user=user)
    for i in range(6):
        tasks.say(user, conversation, f"Message number {i}, still chatting about {TOPICS[i]}.", after=10)
    tasks.run_until(None)
    calls = len(judge_inputs(user))

    tasks = TaskClock(start)
    idle = make_user("bench-idle")
    conversation = conversation_create(user=idle)
    for i in range(3):
        tasks.say(idle, conversation, f"Message {i} about {TOPICS[i]}.", after=1 if i < 2 else 0)
    last = tasks.now
    tasks.due.clear()  # the hook's own tasks are lost here: only the sweep finds the messages
    while not any(user_id == idle.pk for user_id, _ in recovery.pending_work()):
        tasks.now += timedelta(seconds=1)
        if tasks.now - last > timedelta(hours=1):
            raise RuntimeError("an idle user's messages were not due for the sweep within an hour")
    return calls, (tasks.now - last).total_seconds()


def greeting_characters() -> tuple[int, int]:
    """Memory characters a greeting carries for a user with 300 memories, none pinned; and with two pinned
    ones, the characters beyond their text."""
    from chat.extensions import TurnContext
    from chat.services import conversation_create
    from memory.context import memory_block
    from memory.models import Memory

    user = make_user("bench-greeting")
    texts = [f"Enjoys {TOPICS[i % 8]} trips, last one near {PLACES[i // 8 % 10]} (note {i})." for i in range(300)]
    Memory.objects.bulk_create(Memory(owner=user, content=text, origin="added") for text in texts)

    def greeting() -> int:
        conversation = conversation_create(user=user)
        message = turn(user, conversation, "Good morning!")
        ctx = TurnContext(user=user, conversation=conversation, user_message=message)
        return len(memory_block(ctx) or "")

    without = greeting()
    pinned = ["Is allergic to peanuts.", "Prefers to be called Sam."]
    Memory.objects.bulk_create(Memory(owner=user, content=text, origin="added", pinned=True) for text in pinned)
    return without, greeting() - sum(map(len, pinned))


# --- 2. queries per run --------------------------------------------------------------------------


class QueryCount:
    """Counts what this thread's connection sends while it is entered: statements and commits, as
    Django's query log lists them. Not Django's CaptureQueriesContext: that reads the length of the query
    log, which DEBUG fills on every query and which holds 9,000 entries; once part 1 had filled it, the
    length stayed put and every run counted 0 queries."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> QueryCount:
        from django.db import connection

        self._connection = connection
        self._wrapper = connection.execute_wrapper(self._counted)
        self._wrapper.__enter__()
        commit = connection.commit

        def counted_commit() -> None:
            self.count += 1
            commit()

        connection.commit = counted_commit  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        del self._connection.commit  # back to the class's own
        self._wrapper.__exit__(*exc)

    def __len__(self) -> int:
        return self.count

    def _counted(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.count += 1
        return execute(sql, params, many, context)


def queries_per_run(memories: int, messages: int) -> tuple[int, int]:
    """Total queries and runs for extracting `messages` pending messages (40 per run)."""
    from chat.models import Message
    from chat.services import conversation_create
    from memory.extraction import batches, claim
    from memory.models import Memory

    user = make_user(f"bench-queries-{memories}-{messages}")
    Memory.objects.bulk_create([Memory(owner=user, content=f"Fact number {i}.") for i in range(memories)])
    conversation = conversation_create(user=user)
    rows = [
        Message(conversation=conversation, user=user, role="user", content=f"Question {i}?", memory_status="pending")
        for i in range(messages - 1)
    ]
    rows.append(
        Message(conversation=conversation, user=user, role="user", content="I wear glasses.", memory_status="pending")
    )
    Message.objects.bulk_create(rows)
    last = Message.objects.filter(user=user).order_by("-id").first()
    assert last is not None
    claim.claim_release(user_id=user.pk, token=claim.claim_take(user_id=user.pk))  # type: ignore[arg-type]
    with QueryCount() as captured:
        result = batches.extract(user_id=user.pk, trigger="manual", up_to_message_id=last.pk, min_pending=1)
    assert result.added == 1 and result.batches == len(result.run_ids), result
    return len(captured), len(result.run_ids)


# --- 5. throughput -------------------------------------------------------------------------------


def throughput(users: int, backlog: int = 3) -> tuple[float, int, set[int]]:
    """Batches per second of one worker process over `users` users with `backlog` pending messages
    each; the number of runs; the distinct query counts of those runs."""
    from django.db.models import Max
    from django.test.utils import override_settings

    from accounts.models import User
    from chat.models import AgentState, Conversation, Message
    from memory.extraction import batches, outcomes
    from memory.models import ExtractionRun

    people = User.objects.bulk_create([User(username=f"bench-throughput-{i}", password="!") for i in range(users)])
    conversations = Conversation.objects.bulk_create([Conversation(owner=u, title="Backlog") for u in people])
    AgentState.objects.bulk_create([AgentState(conversation=c) for c in conversations])
    Message.objects.bulk_create(
        [
            Message(conversation=c, user=c.owner, role="user", content=FILLER[k % len(FILLER)], memory_status="pending")
            for c in conversations
            for k in range(backlog)
        ]
    )
    last = dict(Message.objects.filter(user__in=people).values_list("user_id").annotate(last=Max("id")))
    counts: set[int] = set()
    started = time.perf_counter()
    # The backlog was just written: without this the background run would wait for the users' quiet spell
    # (MEMORY_EXTRACT_IDLE_SECONDS), which is what a burst is for, not what this part measures.
    quiet = override_settings(MEMORY_EXTRACT_IDLE_SECONDS=0)
    quiet.enable()
    for user in people:
        # What the worker's task does for one user (memory.tasks.extract_memories_task), without Celery's tracing.
        with QueryCount() as captured:
            result = batches.extract(user_id=user.pk, trigger="background", up_to_message_id=last[user.pk])
        assert result.status == outcomes.Outcome.APPLIED, result
        counts.add(len(captured))
    elapsed = time.perf_counter() - started
    quiet.disable()
    runs = ExtractionRun.objects.filter(owner__in=people).count()
    return runs / elapsed, runs, counts


# --- 3. the memory block -------------------------------------------------------------------------


def block_build_ms(count: int = 200, repeat: int = 500) -> tuple[float, float, int]:
    from chat.extensions import TurnContext
    from chat.models import Message
    from chat.services import conversation_create
    from memory.context import memory_block
    from memory.models import Memory

    user = make_user("bench-block")
    texts = [f"Enjoys {TOPICS[i % 8]} trips, last one near {PLACES[i // 8 % 10]} (note {i})." for i in range(count)]
    Memory.objects.bulk_create([Memory(owner=user, content=text) for text in texts])
    conversation = conversation_create(user=user)
    # A message some memories bear on, so the block holds memories (a greeting's would be empty).
    question = "Any kayaking spots near Porto for a beginner?"
    message = Message.objects.create(conversation=conversation, user=user, role="user", content=question)
    ctx = TurnContext(user=user, conversation=conversation, user_message=message)
    memory_block(ctx)  # warm up
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        block = memory_block(ctx)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.95)], len(block or "")


# --- 4. end-to-end latency through a real worker -------------------------------------------------


def latency_child(rounds: int) -> None:
    """Runs in a subprocess whose environment picks the broker; prints one JSON line of timings."""
    from chat.services import conversation_create
    from config.celery import ensure_broker_dirs
    from memory.models import Memory

    ensure_broker_dirs()
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    log = open(Path(os.environ["MEMORA_VAR_DIR"]) / "worker.log", "w")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [
            CELERY,
            "-A",
            "config",
            "worker",
            "--loglevel",
            "WARNING",
            "--concurrency",
            "1",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timings: list[float] = []
    try:
        for i in range(rounds + 1):  # the first round also waits for the worker to boot
            user = make_user(f"bench-latency-{i}")
            conversations = {"a": conversation_create(user=user), "b": conversation_create(user=user)}
            for key, text in PHONE_FLOW[:-1]:
                turn(user, conversations[key], text)
            key, text = PHONE_FLOW[-1]
            started = time.perf_counter()
            turn(user, conversations[key], text)  # commits, then the hook enqueues the task
            deadline = started + (WORKER_BOOT_SECONDS if i == 0 else ROUND_TIMEOUT_SECONDS)
            while not Memory.objects.filter(owner=user).exists():
                if time.perf_counter() > deadline or worker.poll() is not None:
                    raise SystemExit(f"no memory within the time limit (worker log: {log.name})")
                time.sleep(0.002)
            if i:
                timings.append((time.perf_counter() - started) * 1000)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
    print(json.dumps(timings))


def measure_latency(redis_url: str, rounds: int) -> list[float]:
    var_dir = Path(tempfile.mkdtemp(prefix="memora-bench-latency-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"}
    }
    env["MEMORA_VAR_DIR"] = str(var_dir)
    # The pipeline's own latency: the run starts at once, not after a minute of quiet.
    env["MEMORY_EXTRACT_IDLE_SECONDS"] = "0"
    if redis_url:
        env["REDIS_URL"] = redis_url
    try:
        done = subprocess.run(
            [PYTHON, __file__, "--latency-child", "--rounds", str(rounds)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=WORKER_BOOT_SECONDS + rounds * ROUND_TIMEOUT_SECONDS + 60,
        )
        if done.returncode != 0:
            worker_log = var_dir / "worker.log"
            tail = worker_log.read_text(errors="replace").strip().splitlines()[-5:] if worker_log.exists() else []
            last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "latency run failed"
            raise RuntimeError("\n".join([last, "worker log:", *tail]))
        return [float(x) for x in json.loads(done.stdout.strip().splitlines()[-1])]
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


def summary(timings: list[float]) -> str:
    ordered = sorted(timings)
    return f"median {statistics.median(ordered):.0f} ms, max {ordered[-1]:.0f} ms over {len(ordered)} turns"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured turns per broker for the latency")
    parser.add_argument("--users", type=int, default=1000, help="users with a backlog, for the throughput")
    parser.add_argument("--throughput-only", action="store_true", help="only part 5")
    parser.add_argument("--latency-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.latency_child:
        setup_django(Path(os.environ["MEMORA_VAR_DIR"]), redis_url=os.environ.get("REDIS_URL", ""))
        latency_child(args.rounds)
        return 0

    redis_url = os.environ.get("REDIS_URL", "").strip()
    var_dir = Path(tempfile.mkdtemp(prefix="memora-bench-"))
    try:
        setup_django(var_dir)
        from django.conf import settings

        print(
            f"Memory extraction bench (SQLite scratch database, offline demo judge, threshold "
            f"{settings.MEMORY_EXTRACT_MIN_TURNS})",
            flush=True,
        )
        if args.throughput_only:
            rate, runs, counts = throughput(args.users)
            print(f"5. {rate:.1f} batches/s per worker process ({runs} runs; queries per run: {sorted(counts)})")
            return 0
        print(f"   {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start", flush=True)
        for memories, window in ((20, 4096), (500, 4096), (500, 32000)):
            calls, characters, shown = judge_calls_per_100(memories, window)
            targets = "targets: <= 20 calls, <= 100,000 characters, < 100 memories"
            if window != 4096:  # the targets are set on a small window; a larger one shows more memories a request
                targets = "for comparison: the character target is set on 4,096; < 100 memories still holds"
            print(
                f"1. 100 user messages, {memories} memories, {window}-token judge window: {calls} judge calls, "
                f"{characters:,} characters sent to the judge, at most {shown} memories in one request  ({targets})",
                flush=True,
            )
        from memory.extraction.judge import judge_prompt

        prompt = len(judge_prompt())
        print(f"1. The judge prompt at the default settings: {prompt:,} characters  (target <= 4,500)", flush=True)
        calls, idle = burst_and_idle()
        print(
            f"1. A burst of 6 messages 10 s apart: {calls} background judge call(s)  (target: 1); an idle user's 3 "
            f"messages are due for the sweep {idle:.0f} s after the last (MEMORY_EXTRACT_IDLE_SECONDS "
            f"{settings.MEMORY_EXTRACT_IDLE_SECONDS:g}; the sweep runs every {settings.MEMORY_SWEEP_SECONDS:g} s)",
            flush=True,
        )
        without, framing = greeting_characters()
        print(
            f"1. A greeting from a user with 300 memories: {without} memory characters with none pinned "
            f"(target: 0); with two pinned, {framing} characters beyond their text (target <= 80)",
            flush=True,
        )
        figures = []
        for memories, messages in ((10, 3), (200, 40), (200, 200)):
            queries, runs = queries_per_run(memories, messages)
            figures.append(f"{queries} queries / {runs} run(s) for {memories} memories + {messages} messages")
        print("2. Queries per extraction run: " + "; ".join(figures))
        median, p95, size = block_build_ms()
        print(
            f"3. Memory block with 200 active memories, for a message some of them bear on: median {median:.2f} ms, "
            f"p95 {p95:.2f} ms ({size} characters, budget {settings.MEMORY_PROMPT_MAX_CHARS})  (target <= 5 ms)",
            flush=True,
        )
        print(
            f"4. Turn commit -> memory row, real Celery worker, no wait for quiet, filesystem broker: "
            f"{summary(measure_latency('', args.rounds))}",
            flush=True,
        )
        if redis_url:
            print(
                f"   Turn commit -> memory row, real Celery worker, no wait for quiet, Redis broker: "
                f"{summary(measure_latency(redis_url, args.rounds))}",
                flush=True,
            )
        else:
            print("   Redis: skipped (set REDIS_URL to measure it)")
        rate, runs, counts = throughput(args.users)
        load = os.getloadavg()
        print(
            f"5. Throughput, {args.users} users with 3 pending messages each: {rate:.1f} batches/s per worker "
            f"process ({runs} runs; queries per run: {', '.join(map(str, sorted(counts)))}; "
            f"{os.cpu_count()} CPUs, load average {load[0]:.2f})",
            flush=True,
        )
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
