"""Conversation search figures on a 50,000-message account: size on disk, query time, write overhead per turn.

    .venv/bin/python bench/search.py [--messages 50000] [--others 10000] [--queries 40]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_search .venv/bin/python bench/search.py
    DATABASE_URL=sqlite:////tmp/search.sqlite3 .venv/bin/python bench/search.py --keep   # then --reuse

`--keep` leaves the accounts in the database; `--reuse` times those instead of building new ones (the same
queries either way), so code can be compared on the same data. The HTTP server takes a port from
E2E_PORT_FIRST to E2E_PORT_LAST when they are set.

Builds one account with `--messages` messages (half the user's, half replies; a quarter of them in Chinese)
in 500 conversations, and another account with `--others`, on a scratch SQLite file, or on the PostgreSQL
database DATABASE_URL names (migrated, its bench users deleted again at the end). Messages are written in
bulk and indexed by the same function the services call (chat.search.index), in batches.

Prints:
- size: the messages table, the search entries (with their B-tree indexes) and the full-text index itself;
- query time: `chat.search.query.search` as GET /api/search runs it (count, one page of 20, excerpts),
  p50/p95/max per kind of query: a rare word, a common word, two words, a Chinese word, a word being typed,
  wall clock and CPU (the process's, and on PostgreSQL its server process's); then the same queries through
  HTTP: GET /api/search with an API token, served by scripts/serve.py on the same database as `make run`
  serves it, wall clock and the web process's CPU, beside the in-process figures; the load average with each;
- write overhead per turn: a turn's two transactions (chat.services.turn_start, turn_finish) with the index
  and with it switched off, side by side.
Bounded: about 40 s of CPU on SQLite, most of it building the account (terms for 55,000 messages and
their INSERTs); on a machine shared with other work that is three to four minutes of wall clock, so
`--messages 20000` is the quick run (the figures of a smaller account are a lower bound).
"""

# ruff: noqa: SIM905 (word lists read best as one string)
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_USERS = ("bench-search", "bench-search-other")

EN_COMMON = "the a to and I you it is for my of in that with this what can me be on have do".split()
EN_TOPICS = (
    "phone screen battery camera budget travel train hotel city downtown quiet weekend recipe vegetarian "
    "coffee tea running shoes marathon knee doctor python code function error database laptop keyboard "
    "garden tomato balcony cat vet insurance tax invoice meeting manager project deadline holiday beach "
    "mountain hiking tent rain jacket gift birthday daughter school homework piano guitar song movie book "
    "novel library museum ticket flight airport visa passport salary rent apartment kitchen oven bread"
).split()
# A vocabulary of 5,000 words used with Zipf's law, as in real text: a few words are in a quarter of the
# messages, most in a handful.
SYLLABLES = "ka lo mi ne ru sa ti vo ber dan fel gor hin jas kem lun mor nap pel rix sor tam vin wex yol zu".split()
SYNTHETIC = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES[:8]]
EN_WORDS = EN_TOPICS + SYNTHETIC[: 5000 - len(EN_TOPICS)]
ZH_PHRASES = (
    "手机 屏幕 电池 相机 预算 旅行 火车 酒店 城市 市中心 安静 周末 菜谱 素食 咖啡 跑步 鞋子 马拉松 膝盖 医生 "
    "代码 数据库 笔记本 键盘 花园 番茄 阳台 小猫 保险 发票 会议 项目 假期 海边 爬山 帐篷 下雨 礼物 生日 女儿 "
    "学校 作业 钢琴 吉他 电影 小说 图书馆 博物馆 机票 机场 签证 护照 工资 房租 公寓 厨房 面包"
).split()
ZH_FILLER = "我 想 要 一个 的 了 是 在 和 你 觉得 怎么样 可以 吗 推荐 比较 喜欢 最近 因为 所以".split()


def zipf(rng: random.Random, words: list[str]) -> str:
    """A word drawn with probability ~ 1/rank."""
    return words[min(len(words) - 1, int(len(words) ** rng.random()) - 1)]


def setup_django() -> None:
    if not os.environ.get("DATABASE_URL"):
        var_dir = Path(tempfile.mkdtemp(prefix="memora-bench-search-"))
        os.environ["MEMORA_VAR_DIR"] = str(var_dir)
        os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)
    os.environ["CHAT_USER_TURNS_PER_MINUTE"] = "0"  # a hundred turns in a few seconds
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def sentence(rng: random.Random, *, reply: bool) -> str:
    """An English or Chinese message; a few words are frequent, most are not (roughly Zipf)."""
    if rng.random() < 0.25:
        n = rng.randint(3, 12) * (3 if reply else 1)
        parts = [rng.choice(ZH_FILLER) if rng.random() < 0.5 else zipf(rng, ZH_PHRASES) for _ in range(n)]
        return "".join(parts) + "。"
    n = rng.randint(6, 30) * (3 if reply else 1)
    words = [rng.choice(EN_COMMON) if rng.random() < 0.45 else zipf(rng, EN_WORDS) for _ in range(n)]
    words += [f"item{rng.randint(0, 200_000)}"]  # a rare token per message
    return " ".join(words).capitalize() + "."


def build_account(username: str, messages: int, rng: random.Random) -> Any:
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import User
    from chat.models import AgentState, Conversation, Message
    from chat.search.index import search_index_messages, search_index_title

    user = User.objects.create_user(username=username, password="bench-password-1")
    conversations = Conversation.objects.bulk_create(
        [Conversation(owner=user, title=f"Chat about {rng.choice(EN_WORDS)} {i}") for i in range(messages // 100 + 1)]
    )
    AgentState.objects.bulk_create([AgentState(conversation=c) for c in conversations])
    for conversation in conversations:
        search_index_title(conversation=conversation)
    start = timezone.now() - timedelta(days=365)
    Message._meta.get_field("created_at").auto_now_add = False  # type: ignore[union-attr]  # spread over a year
    batch: list[Message] = []
    for i in range(messages):
        role = Message.Role.USER if i % 2 == 0 else Message.Role.ASSISTANT
        batch.append(
            Message(
                conversation=conversations[(i // 100) % len(conversations)],
                user=user,
                role=role,
                content=sentence(rng, reply=role == Message.Role.ASSISTANT),
                created_at=start + timedelta(minutes=10 * i),
            )
        )
        if len(batch) == 2000 or i == messages - 1:
            search_index_messages(messages=Message.objects.bulk_create(batch), replace=False)
            batch = []
    Message._meta.get_field("created_at").auto_now_add = True  # type: ignore[union-attr]
    return user


def sizes() -> list[tuple[str, int]]:
    from django.db import connection

    from chat.search import backend

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE chat_searchentry") if not connection.in_atomic_block else None
            cursor.execute("SELECT pg_total_relation_size('chat_message'), pg_total_relation_size('chat_searchentry')")
            messages, entries = cursor.fetchone()
        else:
            cursor.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'chat_message%' OR name LIKE 'msg_%'")
            messages = cursor.fetchone()[0]
            cursor.execute(
                "SELECT SUM(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = "
                "'chat_searchentry')"
            )
            entries = cursor.fetchone()[0]
    index = backend().size_bytes(connection)
    if connection.vendor == "postgresql":
        entries -= index  # pg_total_relation_size includes it
    return [("messages table with its indexes", messages), ("search entries with their B-tree indexes", entries),
            ("full-text index", index)]  # fmt: skip


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds these processes have used so far (Linux /proc; 0 for one that is gone)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def database_pids() -> list[int]:
    """PostgreSQL's server process for this process's connection; none on SQLite, which runs inside it."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return [cursor.fetchone()[0]]


def time_queries(user: Any, queries: dict[str, list[str]]) -> dict[str, list[float]]:
    """Per kind: wall-clock ms, CPU ms (this process's, and on PostgreSQL its server process's), hits."""
    from chat.search.query import search

    database = database_pids()
    timings: dict[str, list[float]] = {}
    for kind, texts in queries.items():
        for text in texts:
            started, cpu = time.perf_counter(), time.process_time() + cpu_seconds(database)
            page = search(user=user, text=text, limit=20)
            timings.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
            timings.setdefault(f"{kind} cpu", []).append((time.process_time() + cpu_seconds(database) - cpu) * 1000)
            timings.setdefault(f"{kind} hits", []).append(page.total)
    return timings


def time_http(user: Any, queries: dict[str, list[str]]) -> dict[str, list[float]]:
    """The same queries as GET /api/search?q=…&limit=20 with an API token, through the app as `make run`
    serves it (scripts/serve.py on this database, a connection kept open as a client would): wall-clock ms,
    and CPU ms of the web server's process (on PostgreSQL without the database server's: without
    DATABASE_POOL each request opens a connection, served by a process of its own)."""
    import http.client
    import shutil
    import signal
    import subprocess
    import urllib.parse

    from accounts.services import api_token_create
    from tests.processes import free_port, wait_for_port

    _, token = api_token_create(user=user)
    first, last = int(os.environ.get("E2E_PORT_FIRST", "18340")), int(os.environ.get("E2E_PORT_LAST", "18399"))
    port = free_port(range(first, last + 1))
    scratch = Path(tempfile.mkdtemp(prefix="memora-bench-search-serve-"))
    env = {**os.environ, "PORT": str(port), "DJANGO_DEBUG": "1", "LOG_LEVEL": "WARNING"}
    env.setdefault("MEMORA_VAR_DIR", str(scratch))
    log = scratch / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "scripts/serve.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    timings: dict[str, list[float]] = {}
    try:
        wait_for_port(port, server, seconds=120, log=log)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Bearer {token}"}
        web = [int(p) for p in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]
        web = [pid for pid in web if b"uvicorn" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        for kind, texts in queries.items():
            for text in texts:
                started, cpu = time.perf_counter(), cpu_seconds(web)
                connection.request("GET", f"/api/search?limit=20&q={urllib.parse.quote(text)}", headers=headers)
                response = connection.getresponse()
                response.read()
                timings.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
                timings.setdefault(f"{kind} cpu", []).append((cpu_seconds(web) - cpu) * 1000)
                if response.status != 200:
                    raise RuntimeError(f"GET /api/search answered {response.status}")
        connection.close()
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        shutil.rmtree(scratch, ignore_errors=True)
    return timings


def time_turns(user: Any, turns: int, *, indexed: bool) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU ms (this process's) of a turn's two transactions, with or without the index."""
    from chat import services
    from chat.search import index
    from chat.turn import transactions

    conversation = services.conversation_create(user=user)
    real = transactions.search_index_messages
    if not indexed:
        transactions.search_index_messages = lambda **kwargs: None  # type: ignore[assignment]
    wall, cpu = [], []
    try:
        for n in range(turns):
            started, cpu_started = time.perf_counter(), time.process_time()
            text = f"Turn {n}: which phone for travel?"
            turn = transactions.turn_start(user=user, conversation=conversation, content=text)
            reply = "A small phone with a big battery, and a camera that is good enough. " * 10
            transactions.turn_finish(turn=turn, status="complete", content=reply, new_items=[])
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
    finally:
        transactions.search_index_messages = real
        assert index.search_index_messages is real
    return wall, cpu


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--others", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=30, help="per kind of query")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the bench accounts (to look at the database)")
    parser.add_argument(
        "--reuse", action="store_true", help="time the accounts a --keep run left on DATABASE_URL, not new ones"
    )
    args = parser.parse_args()
    setup_django()
    from django.db import connection, transaction

    from accounts.models import User
    from chat.models import Message

    reused = User.objects.filter(username=BENCH_USERS[0]).first() if args.reuse else None
    if reused is not None and Message.objects.filter(user=reused).count() < args.messages:
        raise SystemExit(f"{BENCH_USERS[0]} has fewer than {args.messages:,} messages: run without --reuse")
    if reused is None:
        User.objects.filter(username__in=BENCH_USERS).delete()
    rng = random.Random(28)
    load = os.getloadavg()
    version = getattr(connection, "pg_version", None) or getattr(connection.Database, "sqlite_version", "")  # type: ignore[attr-defined]
    print(f"Conversation search on {connection.vendor} ({version}), "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    started = time.perf_counter()
    if reused is not None:
        user = reused
        print(f"reusing {args.messages:,} messages of {BENCH_USERS[0]}")
    else:
        with transaction.atomic():
            user = build_account(BENCH_USERS[0], args.messages, rng)
            build_account(BENCH_USERS[1], args.others, rng)
        print(f"built {args.messages:,} + {args.others:,} messages, indexed, in {time.perf_counter() - started:.1f} s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE chat_searchentry")
            cursor.execute("ANALYZE chat_message")

    print("\nsize on disk")
    table = sizes()
    for name, size in table:
        print(f"  {name:<45} {size / 1e6:8.1f} MB  ({size / (args.messages + args.others):6.0f} B/message)")

    q = args.queries
    rng = random.Random(29)  # the same queries whether the accounts were built or reused
    queries = {
        "rare word": [f"item{rng.randint(0, 200_000)}" for _ in range(q)],
        "topic word": [zipf(rng, EN_WORDS) + " " for _ in range(q)],
        "frequent word": [rng.choice(EN_WORDS[:5]) + " " for _ in range(q)],
        "stop word": [rng.choice(EN_COMMON) + " " for _ in range(q)],
        "two words": [f"{zipf(rng, EN_WORDS)} {zipf(rng, EN_WORDS)} " for _ in range(q)],
        "Chinese word": [zipf(rng, ZH_PHRASES) for _ in range(q)],
        "being typed": [rng.choice(EN_TOPICS)[:3] for _ in range(q)],
    }
    time_queries(user, {"warm-up": ["phone"] * 3})
    timings = time_queries(user, queries)
    load = os.getloadavg()
    print(f"\nquery time (search(): count + a page of 20 + excerpts; {q} queries per kind), ms; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    print(f"  {'':<15} {'wall p50':>9} {'p95':>6} {'max':>6}   {'CPU p50':>8} {'p95':>6}   median hits")
    every: list[float] = []
    every_cpu: list[float] = []
    for kind in queries:
        ms, cpu = timings[kind], timings[f"{kind} cpu"]
        every, every_cpu = every + ms, every_cpu + cpu
        hits = statistics.median(timings[f"{kind} hits"])
        print(f"  {kind:<15} {statistics.median(ms):9.1f} {p95(ms):6.1f} {max(ms):6.1f}   "
              f"{statistics.median(cpu):8.1f} {p95(cpu):6.1f}   {hits:,.0f}")  # fmt: skip
    print(f"  {'all':<15} {statistics.median(every):9.1f} {p95(every):6.1f} {max(every):6.1f}   "
          f"{statistics.median(every_cpu):8.1f} {p95(every_cpu):6.1f}")  # fmt: skip

    over_http = time_http(user, {"warm-up": ["phone"] * 3, **queries})
    load = os.getloadavg()
    print(f"\nquery time through HTTP (GET /api/search, `make run`'s server, the same {q} queries per kind), ms; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    print(f"  {'':<15} {'wall p50':>9} {'p95':>6} {'max':>6}   {'CPU p50':>8} {'p95':>6}   in process: p50 {'p95':>6}")
    every_http: list[float] = []
    every_http_cpu: list[float] = []
    for kind in queries:
        ms, cpu, local = over_http[kind], over_http[f"{kind} cpu"], timings[kind]
        every_http, every_http_cpu = every_http + ms, every_http_cpu + cpu
        print(f"  {kind:<15} {statistics.median(ms):9.1f} {p95(ms):6.1f} {max(ms):6.1f}   "
              f"{statistics.median(cpu):8.1f} {p95(cpu):6.1f}   "
              f"{statistics.median(local):17.1f} {p95(local):6.1f}")  # fmt: skip
    print(f"  {'all':<15} {statistics.median(every_http):9.1f} {p95(every_http):6.1f} {max(every_http):6.1f}   "
          f"{statistics.median(every_http_cpu):8.1f} {p95(every_http_cpu):6.1f}   "
          f"{statistics.median(every):17.1f} {p95(every):6.1f}")  # fmt: skip
    target = 80 if args.messages <= 50_000 else 150
    print(f"  [{'ok' if p95(every_http) <= target else 'MISSED'}] p95 through HTTP ≤ {target} ms "
          f"at {args.messages:,} messages")  # fmt: skip

    if args.turns >= 2:
        time_writes(user, args.turns)
    if not args.keep:
        User.objects.filter(username__in=BENCH_USERS).delete()
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


def time_writes(user: Any, turns: int) -> None:
    with_index, with_cpu = time_turns(user, turns, indexed=True)
    without, without_cpu = time_turns(user, turns, indexed=False)
    print(f"\nwrite overhead per turn (turn_start + turn_finish without the model, {turns} turns each), ms")
    print(f"  {'':<15} {'wall p50':>9} {'p95':>6}   {'CPU p50':>8} {'p95':>6}")
    for name, w, c in (("with the index", with_index, with_cpu), ("without", without, without_cpu)):
        print(f"  {name:<15} {statistics.median(w):9.2f} {p95(w):6.2f}   {statistics.median(c):8.2f} {p95(c):6.2f}")
    print(f"  {'overhead':<15} {statistics.median(with_index) - statistics.median(without):+9.2f} {'':>6}   "
          f"{statistics.median(with_cpu) - statistics.median(without_cpu):+8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
