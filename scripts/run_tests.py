"""`make test`: lint (ruff, mypy), the whole suite on the embedded defaults (SQLite, in-memory channel layer,
filesystem broker), the chat and accounts tests again without the memory app installed (chat works on its
own; config/settings/test_without_memory.py, tests marked `needs_memory` left out, no browser tests), then
the whole suite again on PostgreSQL + Redis when they are reachable.

With CI=true, PostgreSQL, Redis and Chromium are required: their absence fails the run instead of
skipping tests, and a smoke test of `make run` (scripts/smoke_run.py) runs first (MEMORA_SMOKE=1
asks for it elsewhere). Extra arguments are passed to pytest (e.g. `scripts/run_tests.py -k api`).

Each step prints its output, in the order above, once it has finished; the run fails if any step failed.
On a machine with two or more CPUs a full run's steps go in three lanes side by side (MEMORA_TEST_LANES=2
or 1 puts them in fewer): lint and the pass on the embedded defaults without its browser tests in one;
the browser tests of that same pass (embedded defaults), then the pass without the memory app, in
another; the smoke test and the pass on PostgreSQL + Redis in the third. With two lanes the pass on the embedded
defaults runs whole, in the first. Lanes use different databases and runtime folders, and each lane's
servers take their own share of the browser tests' ports. Much of a pass's time is spent waiting
(servers starting, streams, the browser), so the lanes take little more than the longest one.
With MEMORA_TEST_WORKERS=N (N > 1; at most 8) every step runs at once and each pass spreads its tests
over N parallel workers (pytest-xdist), each with its own copy of the migrated test database, Redis
database (the Nth after TEST_REDIS_URL's), runtime folder and share of the lane's ports. Each pass ends
with its ten slowest tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.processes import chromium_path  # noqa: E402  (standard library only)

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PG_URL = os.environ.get("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/14")
CHROMIUM = chromium_path()  # the one the browser tests drive (tests/processes.py)
SMOKE_PG_URL = os.environ.get("SMOKE_DATABASE_URL", PG_URL.rsplit("/", 1)[0] + "/memora_smoke")
SMOKE_REDIS_URL = os.environ.get("SMOKE_REDIS_URL", "redis://127.0.0.1:6379/13")
WITHOUT_MEMORY_SETTINGS = "config.settings.test_without_memory"
WITHOUT_MEMORY_PATHS = ("tests/chat", "tests/accounts")
SLOWEST = "--durations=10"

# What a step returns: its exit code and everything it printed.
Outcome = tuple[int, str]


def workers() -> int:
    """How many parallel pytest workers each pass uses: MEMORA_TEST_WORKERS (default 1: none, each pass
    runs in pytest's own process and the steps run one after another). At most 8 fit Redis's 16 databases."""
    return max(1, int(os.environ.get("MEMORA_TEST_WORKERS", "").strip() or 1))


def lanes() -> int:
    """How many lanes of steps run side by side: MEMORA_TEST_LANES, else three with two or more CPUs."""
    chosen = os.environ.get("MEMORA_TEST_LANES", "").strip()
    return max(1, min(3, int(chosen) if chosen else (3 if (os.cpu_count() or 1) >= 2 else 1)))


def lane_ports(lane: int, count: int) -> dict[str, str]:
    """A lane's share of the browser tests' ports (E2E_PORT_FIRST to E2E_PORT_LAST): two lanes' servers
    never pick the same port between checking that it is free and binding it."""
    first = int(os.environ.get("E2E_PORT_FIRST", "18310"))
    last = int(os.environ.get("E2E_PORT_LAST", "18399"))
    share = (last - first + 1) // count
    return {"E2E_PORT_FIRST": str(first + lane * share), "E2E_PORT_LAST": str(first + (lane + 1) * share - 1)}


def reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 0), timeout=2):
            return True
    except OSError:
        return False


def captured(command: list[str], env: dict[str, str] | None = None) -> Outcome:
    """Run `command` in the repository, its output kept (steps run side by side, and print one at a time)."""
    with tempfile.TemporaryFile() as out:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.seek(0)
        return code, out.read().decode(errors="replace")


def pytest(env_extra: dict[str, str], args: list[str]) -> Outcome:
    # The suite picks its own settings module (pyproject.toml) and services; the shell's never leak in.
    dropped = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL", "REDIS_URL", "LLM_BACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in {*dropped, "DJANGO_SETTINGS_MODULE"}}
    env["MEMORA_VAR_DIR"] = tempfile.mkdtemp(prefix="memora-test-")
    env.update(env_extra)
    count = workers()
    parallel = ["-n", str(count), "--dist", "loadgroup"] if count > 1 else []
    return captured([sys.executable, "-m", "pytest", *parallel, SLOWEST, *args], env)


def without_memory_targets(args: list[str]) -> list[str]:
    """What the run without the memory app covers: the chat and accounts tests on a full run, those among
    the paths of a focused run, nothing when pytest options (`-k …`) narrow the run."""
    if not args:
        return list(WITHOUT_MEMORY_PATHS)
    if any(arg.startswith("-") for arg in args):
        return []

    def covered(arg: str) -> bool:
        path = arg.split("::")[0].rstrip("/")
        return any(path == root or path.startswith(root + "/") for root in WITHOUT_MEMORY_PATHS)

    return [arg for arg in args if covered(arg)]


def services_missing(have_pg: bool, have_redis: bool, have_chromium: bool) -> bool:
    """Report the services this machine lacks; True when that must fail the run (CI requires them all)."""
    missing = [
        name for name, ok in (("PostgreSQL", have_pg), ("Redis", have_redis), ("Chromium", have_chromium)) if not ok
    ]
    if missing and CI:
        print(f"CI=true but not available: {', '.join(missing)}. These tests are required in CI.", file=sys.stderr)
        return True
    for name in missing:
        print(f"note: {name} not available here; the tests that need it are skipped (they are required in CI).")
    return False


def lint() -> Outcome:
    bin_dir = Path(sys.executable).parent
    outputs = []
    for command in ([str(bin_dir / "ruff"), "check", "."], [str(bin_dir / "mypy"), "."]):
        code, output = captured(command)
        outputs.append(output)
        if code != 0:
            return 1, "".join(outputs)
    return 0, "".join(outputs)


def smoke_run(have_services: bool) -> Outcome:
    # What a newcomer runs, in a virtualenv with the runtime pins only (see smoke_run.py).
    smoke = [sys.executable, str(ROOT / "scripts" / "smoke_run.py")]
    if have_services:
        smoke += ["--database-url", SMOKE_PG_URL, "--redis-url", SMOKE_REDIS_URL]
    code, output = captured(smoke)
    return (1 if code != 0 else 0), output


def suite_on_defaults(args: list[str], browser: dict[str, str], *, part: bool = False) -> Outcome:
    """The whole suite on the embedded defaults (or, with `part`, the half of it `args` selects): 0 when
    it passed (or a focused run found nothing)."""
    code, output = pytest(browser, args)
    if code not in (0, 5) or (code == 5 and (part or not args)):
        return code or 1, output
    return 0, output


# A full run in three lanes splits the pass on the embedded defaults in two: every test runs once.
BROWSER_PART = ["-m", "browser"]
OTHER_PART = ["-m", "not browser"]


def suite_without_memory(targets: list[str], ports: dict[str, str]) -> Outcome:
    """The chat and accounts pass without the memory app: 0 when it passed or found nothing."""
    options = [f"--ds={WITHOUT_MEMORY_SETTINGS}", "-m", "not needs_memory and not browser"]
    alone, output = pytest({**ports, "MEMORA_BROWSER_TESTS": "0"}, [*options, *targets])
    return (0 if alone in (0, 5) else alone), output


def suite_on_services(args: list[str], ports: dict[str, str]) -> Outcome:
    """The whole suite again on PostgreSQL and Redis: 0 when it passed or found nothing."""
    services = {"DATABASE_URL": PG_URL, "REDIS_URL": REDIS_URL, "MEMORA_BROWSER_TESTS": "0"}
    second, output = pytest({**ports, **services}, args)
    return (0 if second in (0, 5) else second), output


def main() -> int:
    args = sys.argv[1:]
    have_pg, have_redis = reachable(PG_URL), reachable(REDIS_URL)
    have_chromium = Path(CHROMIUM).exists()
    if services_missing(have_pg, have_redis, have_chromium):
        return 1
    browser = {"MEMORA_BROWSER_TESTS": "1" if have_chromium else "0", "CHROMIUM_PATH": CHROMIUM}

    # Each step with its lane: the steps of a lane run in turn, the lanes side by side.
    count = lanes()
    split = count == 3 and not args  # the browser tests of the first pass get a lane of their own
    first, second = lane_ports(0, count), lane_ports(count - 1, count)
    steps: dict[str, tuple[Callable[[], Outcome], int]] = {}
    if not args:  # a full run also lints; a focused run (`-k …`, paths) skips straight to pytest
        steps["Lint: ruff and mypy"] = (lint, 0)
    if CI or os.environ.get("MEMORA_SMOKE") == "1":
        smoke_title = "Smoke test of make run (runtime dependencies only, real worker)"
        steps[smoke_title] = (lambda: smoke_run(have_pg and have_redis), count - 1)
    defaults = "Suite on the embedded defaults (SQLite, in-memory channel layer, filesystem broker)"
    middle = lane_ports(1, count)
    if split:
        in_lane_two = {**middle, **browser}
        steps[f"{defaults}, but its browser tests"] = (lambda: suite_on_defaults(OTHER_PART, first, part=True), 0)
        steps["Its browser tests (Chromium)"] = (lambda: suite_on_defaults(BROWSER_PART, in_lane_two, part=True), 1)
    else:
        steps[defaults] = (lambda: suite_on_defaults(args, {**first, **browser}), 0)
    targets = without_memory_targets(args)
    if targets:
        alone = "Chat and accounts without the memory app (embedded defaults, no browser tests)"
        # After the browser tests when they have a lane of their own: the three lanes then end close together.
        steps[alone] = (lambda: suite_without_memory(targets, middle if split else second), 1 if split else count - 1)
    if have_pg and have_redis:
        services = "Suite on PostgreSQL and Redis (browser tests run in the first pass)"
        steps[services] = (lambda: suite_on_services(args, second), count - 1)
    if workers() > 1:  # every step at once, each pass in parallel workers
        steps = {title: (step, index) for index, (title, (step, _)) in enumerate(steps.items())}

    lanes_used = sorted({lane for _, lane in steps.values()})
    print(f"== {'Side by side' if len(lanes_used) > 1 else 'In turn'}: {'; '.join(steps)}", flush=True)
    started = time.monotonic()
    results: dict[str, Future[tuple[int, str, float]]] = {title: Future() for title in steps}

    def run_lane(lane: int) -> None:
        for title, (step, its_lane) in steps.items():
            if its_lane == lane:
                try:
                    code, output = step()
                except Exception:  # a step that crashed fails the run, and the rest of its lane still runs
                    code, output = 1, traceback.format_exc()
                results[title].set_result((code, output, time.monotonic() - started))

    failed = 0
    with ThreadPoolExecutor(max_workers=len(lanes_used)) as pool:
        for lane in lanes_used:
            pool.submit(run_lane, lane)
        for title, future in results.items():
            code, output, ended = future.result()
            print(f"== {title}: {'passed' if code == 0 else 'FAILED'}, ended after {ended:.0f} s", flush=True)
            print(output, end="" if output.endswith("\n") or not output else "\n", flush=True)
            failed = failed or code
    return failed


if __name__ == "__main__":
    sys.exit(main())
