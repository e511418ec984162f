"""What recall by meaning adds to a turn's first token: `bench/turn_latency.py --memories 300` run with the
embedded embedding model (EMBEDDING_MODEL unset, as `make run` has it) and with EMBEDDING_MODEL=off, one
after the other in one run, the figures printed side by side.

    .venv/bin/python bench/recall_latency.py [--turns 30] [--streams 20]

Each run starts its own fake provider and app (scratch SQLite, as `make run`); the user with 300 memories
(the recall golden set's) has their vectors made before the server starts, as the worker would. Printed:
the provider's own first-token time (called directly, in the same run), the added first-token time over
it for that user's turns (median, p95; each turn's words differ, so none is served from the vectors kept
by text), and the 20
concurrent streams' errors, token rate and first-token p95. The machine's load is printed with each run:
figures are only comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY_ROW = re.compile(
    r"WebSocket, a user with \d+ memories added to first token: median\s+(-?[\d.]+) ms, p95\s+(-?[\d.]+) ms"
)
STREAMS_ROW = re.compile(
    r"^\s+(WebSocket|API \(SSE\))\s+errors\s+(\d+)/\d+.*?= *([\d.]+)% of the provider's.*?p95\s+([\d.]+) ms", re.M
)
MACHINE = re.compile(r"machine: (.*) \(before\)")
DIRECT_ROW = re.compile(r"direct\s+first token: median\s+([\d.]+) ms")


def one_run(embedding: str, args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("EMBEDDING_MODEL", None)
    if embedding:
        env["EMBEDDING_MODEL"] = embedding
    command = [
        sys.executable, "bench/turn_latency.py", "--memories", "300", "--turns", str(args.turns),
        "--streams", str(args.streams), "--long-turns", "2",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout
    machine = MACHINE.search(out)
    figures = {"machine": machine[1] if machine else "?"}
    direct = DIRECT_ROW.search(out)
    figures["provider alone: first token, median"] = f"{direct[1]} ms" if direct else "?"
    memory = MEMORY_ROW.search(out.replace("\n", " "))
    figures["first token added, median"] = f"{memory[1]} ms" if memory else "?"
    figures["first token added, p95"] = f"{memory[2]} ms" if memory else "?"
    for path, errors, ratio, p95 in STREAMS_ROW.findall(out):
        figures[f"{args.streams} streams {path}: errors"] = errors
        figures[f"{args.streams} streams {path}: token rate"] = f"{ratio}% of the provider's"
        figures[f"{args.streams} streams {path}: first token p95"] = f"{p95} ms"
    if done.returncode not in (0, 1) or not memory:
        figures["problem"] = (done.stderr or out)[-400:].replace("\n", " ")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--streams", type=int, default=20)
    args = parser.parse_args()
    runs = {"embedded model": one_run("", args), "EMBEDDING_MODEL=off": one_run("off", args)}
    names = list(dict.fromkeys(name for figures in runs.values() for name in figures))
    width = max(map(len, names))
    print(f"{'':<{width}}  " + "  ".join(f"{label:<28}" for label in runs))
    for name in names:
        print(f"{name:<{width}}  " + "  ".join(f"{runs[label].get(name, '—'):<28}" for label in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
