"""A benchmark given a count it cannot use says so and stops, before it starts any server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--fresh-burst", "-3"], "--fresh-burst is a count: 0 or more"),
        (["--memories", "-1"], "--memories is a count: 0 or more"),
        (["--turns", "0"], "--turns, --streams and --web-processes need at least 1"),
        (["--token-delay", "-0.1"], "--latency-delay and --token-delay are seconds: 0 or more"),
    ],
)
def test_the_turn_latency_bench_refuses_a_count_it_cannot_use(arguments: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "bench/turn_latency.py", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert message in done.stderr
