"""Long-conversation figures: many turns against a local fake provider that refuses requests over its window.

    .venv/bin/python bench/long_conversation.py [--turns 300] [--window 4000] [--sync-turns 100]

Runs real chat turns (chat.turn.agent.Turn, scratch SQLite database) against tests/fake_openai.py with a context
window: a request whose prompt (counted by the fake, like a tokenizer would) plus its max_tokens exceeds the
window is answered HTTP 400 `context_length_exceeded`. CHAT_CONTEXT_TOKENS is set to the same window.

Two scenarios:
1. with a worker: after each turn, a background compaction the turn queued runs at once (as an idle Celery
   worker would, between the user's turns; its time is not part of the turn);
2. without a worker (`--sync-turns`): nothing runs in the background, so every compaction happens
   synchronously at the start of the turn that needs it.

Prints, per scenario: the prompt size of the chat request at turns 10/50/100/300, the largest request,
requests refused, failed turns, summarizer calls per 100 turns, and the latency of a normal turn against one
that needed a synchronous compaction; plus the cost of the post-turn hook that decides on a compaction.
The fake's replies take a few milliseconds, so latencies are dominated by our own code.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKS = (10, 50, 100, 300)

TOPICS = [
    "I want a phone with a small screen, my budget is 600 euros and I mostly take photos of my kids.",
    "Compare the battery of the two you mentioned, and tell me which one charges faster.",
    "我想要一部小屏手机，预算三千元左右，主要用来拍照和看新闻。",
    "What about software updates? I keep phones for four or five years.",
    "Here is my list of must-haves: good camera, headphone jack if possible, under 170 grams, and a decent "
    "speaker. Nice to have: wireless charging, an always-on display, and a blue colour.",
    "Thanks. Which one would you pick for me, and why?",
]


def setup_django(var_dir: Path, base_url: str, window: int, reply: int) -> None:
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ["LLM_BACKEND"] = "openai"
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = "bench"
    os.environ["LLM_MAX_RETRIES"] = "0"
    os.environ["CHAT_CONTEXT_TOKENS"] = str(window)
    os.environ["CHAT_REPLY_TOKENS"] = str(reply)
    # One conversation sends hundreds of turns as fast as the fake answers: more than a person would.
    os.environ["CHAT_USER_TURNS_PER_MINUTE"] = "0"
    os.environ["CHAT_ADDRESS_TURNS_PER_MINUTE"] = "0"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def responder(reply_words: int, summary_delay: float, token_delay: float) -> Any:
    from tests.fake_openai import FakeResponse, summary_request

    words = [f"w{i} " for i in range(reply_words)]
    summary = (
        "The user wants a small phone (budget 600 euros, photos of the kids, keeps phones 4-5 years); "
        "we narrowed it down to two models and compared battery, charging and updates. Open: the final pick."
    )

    def respond(body: dict[str, Any]) -> FakeResponse:
        if not summary_request(body):
            return FakeResponse(chunks=words, chunk_delay=token_delay)
        return FakeResponse(summary, delay_before=summary_delay)

    return respond


async def run_scenario(server: Any, *, turns: int, background: bool) -> dict[str, Any]:
    from asgiref.sync import sync_to_async

    import chat.tasks
    from accounts.models import User
    from chat.models import AgentState
    from chat.services import conversation_create
    from chat.turn import compaction
    from chat.turn.agent import Turn
    from tests.fake_openai import summary_request

    queued: list[Any] = []
    hook_seconds: list[float] = []
    original_hook = compaction.schedule_if_needed

    def timed_hook(**kwargs: Any) -> bool:
        started = time.perf_counter()
        try:
            return original_hook(**kwargs)
        finally:
            hook_seconds.append(time.perf_counter() - started)

    compaction.schedule_if_needed = timed_hook  # type: ignore[assignment]
    chat.tasks.enqueue_compaction = queued.append  # type: ignore[assignment]

    name = f"bench-{'bg' if background else 'sync'}"
    user = await sync_to_async(User.objects.create_user)(username=name, password=None)
    conversation = await sync_to_async(conversation_create)(user=user)
    server.reset()
    failed = 0
    normal: list[float] = []
    compacting: list[float] = []
    prompt_at: dict[int, int] = {}
    for i in range(1, turns + 1):
        content = f"({i}) " + TOPICS[i % len(TOPICS)]
        first = len(server.requests)
        started = time.perf_counter()
        turn = await Turn.begin(user=user, conversation=conversation, content=content)
        events = [(event.type, event.tool) async for event in turn.events() if event.type != "delta"]
        elapsed = time.perf_counter() - started
        if events[-1][0] != "done":
            failed += 1
        (compacting if ("tool", compaction.SUMMARIZING) in events else normal).append(elapsed)
        chats = [n for n, body in enumerate(server.requests[first:], start=first) if not summary_request(body)]
        if i in MARKS and chats:
            prompt_at[i] = server.prompt_sizes[chats[-1]]
        if background:
            while queued:
                await sync_to_async(compaction.compact_in_background)(conversation_id=queued.pop())
        else:
            queued.clear()
            await sync_to_async(AgentState.objects.filter(conversation=conversation).update)(compacting_since=None)
    summaries = sum(1 for body in server.requests if summary_request(body))
    state = await sync_to_async(AgentState.objects.get)(conversation=conversation)
    compaction.schedule_if_needed = original_hook  # type: ignore[assignment]
    return {
        "turns": turns,
        "prompt_at": prompt_at,
        "largest": max(server.prompt_sizes),
        "refused": server.refused,
        "failed": failed,
        "summaries_per_100": 100 * summaries / turns,
        "compactions": state.compactions,
        "normal_ms": 1000 * statistics.median(normal) if normal else None,
        "compacting_ms": 1000 * statistics.median(compacting) if compacting else None,
        "compacting_turns": len(compacting),
        "hook_ms": 1000 * statistics.median(hook_seconds) if hook_seconds else None,
        "hook_p95_ms": 1000 * sorted(hook_seconds)[int(len(hook_seconds) * 0.95)] if hook_seconds else None,
    }


def report(title: str, r: dict[str, Any], window: int) -> None:
    print(f"\n{title}: {r['turns']} turns, window {window} tokens")
    marks = ", ".join(f"turn {k}: {v}" for k, v in sorted(r["prompt_at"].items()))
    print(f"  chat request prompt size (fake's count)  {marks}")
    print(f"  largest request                          {r['largest']} tokens (window {window})")
    print(f"  requests refused for length              {r['refused']}")
    print(f"  failed turns                             {r['failed']}")
    print(f"  summarizer calls per 100 turns           {r['summaries_per_100']:.1f} ({r['compactions']} compactions)")
    normal = f"{r['normal_ms']:.0f} ms" if r["normal_ms"] is not None else "-"
    compacting = f"{r['compacting_ms']:.0f} ms" if r["compacting_ms"] is not None else "-"
    print(f"  turn latency, median: normal             {normal}")
    print(f"  turn latency, median: with a synchronous compaction  {compacting} ({r['compacting_turns']} turns)")
    if r["hook_ms"] is not None:
        print(f"  post-turn compaction check               {r['hook_ms']:.1f} ms median, {r['hook_p95_ms']:.1f} ms p95")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--sync-turns", type=int, default=100, help="turns of the scenario without a worker")
    parser.add_argument("--window", type=int, default=4000)
    parser.add_argument("--reply-tokens", type=int, default=800)
    parser.add_argument("--reply-words", type=int, default=80)
    parser.add_argument("--summary-delay", type=float, default=0.3, help="seconds the fake takes to summarize")
    parser.add_argument("--token-delay", type=float, default=0.0005)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from tests.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(context_window=args.window).start()
    server.responder = responder(args.reply_words, args.summary_delay, args.token_delay)
    try:
        with tempfile.TemporaryDirectory(prefix="memora-bench-") as tmp:
            setup_django(Path(tmp), server.base_url, args.window, args.reply_tokens)
            print(f"Long conversations against a fake provider refusing requests over {args.window} tokens")
            print(f"(CHAT_CONTEXT_TOKENS={args.window}, CHAT_REPLY_TOKENS={args.reply_tokens}; replies of ")
            print(f" {args.reply_words} words; the fake takes {args.summary_delay}s per summary)")
            with_worker = asyncio.run(run_scenario(server, turns=args.turns, background=True))
            report("With a worker (background compaction between turns)", with_worker, args.window)
            if args.sync_turns:
                without = asyncio.run(run_scenario(server, turns=args.sync_turns, background=False))
                report("Without a worker (every compaction synchronous)", without, args.window)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
