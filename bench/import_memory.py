"""Importing a large ChatGPT export: the worker's memory while it streams, and how long it takes.

    .venv/bin/python bench/import_memory.py [--megabytes 200] [--keep]

Writes a ChatGPT data export of about `--megabytes` MB of conversations.json (zipped, written as a stream:
conversations of ten turns, English and Chinese, each with an edited branch and a hidden system message,
as the real export shapes them), then runs, in a child process on a scratch SQLite database, what an
upload and the worker do with it: the check and preview (imports.services.import_create_from_file) and
the import itself (imports.runner.import_run, the Celery task's body). The parent samples the child's
resident memory (VmRSS) every 50 ms and prints its idle size (Django set up, database migrated, nothing
read), its peak, the difference, the time each step took, and what landed. Prints the machine and its load.
Bounded by the size: a few minutes for 200 MB on a quiet machine, more on a loaded one.
"""

# ruff: noqa: SIM905 (a word list reads best as one string)
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_600_000_000.0
# Words drawn at random, so the file compresses like real chats (about 3:1), not like one repeated line.
EN = (
    "trip coast spring budget trains towns nights guest houses harbour weekend museum quiet street coffee "
    "bicycle river rain subway podcast books camera phone battery screen recipe dinner garden hotel map "
    "ticket morning evening friend family walk mountain lake bridge market bakery island ferry station"
).split()
ZH = list("周末山里走小溪安静客栈路程小时推荐书适合路上看天气地铁公司咖啡面包火车酒店博物馆朋友家人湖边桥市场")


def _message(node: str, role: str, text: str, at: float, *, hidden: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"is_visually_hidden_from_conversation": True} if hidden else {}
    return {
        "id": f"m-{node}",
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": {"content_type": "text", "parts": [text]},
        "status": "finished_successfully",
        "end_turn": role == "assistant" or None,
        "weight": 1.0,
        "metadata": metadata,
        "recipient": "all",
    }


def _text(chance: random.Random, words: int, *, chinese: bool) -> str:
    if chinese:
        return "".join(chance.choices(ZH, k=words * 2)) + "。"
    return " ".join(chance.choices(EN, k=words)).capitalize() + "."


def conversation(n: int) -> dict[str, Any]:
    chance = random.Random(n)
    at = T0 + n * 3600
    nodes: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]}}
    nodes["sys"] = {
        "id": "sys",
        "message": _message("sys", "system", "", at, hidden=True),
        "parent": "root",
        "children": [],
    }
    parent = "sys"
    for turn in range(10):
        node = f"t{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        text = _text(chance, 40 if role == "user" else 120, chinese=turn % 3 == 0)
        nodes[node] = {
            "id": node,
            "message": _message(node, role, text, at + turn * 30),
            "parent": parent,
            "children": [],
        }
        nodes[parent]["children"].append(node)
        parent = node
    # An edited question: a branch the user left (not imported).
    edited = _message("edit", "user", _text(chance, 30, chinese=False), at + 45)
    nodes["edit"] = {"id": "edit", "message": edited, "parent": "t0", "children": []}
    nodes["t0"]["children"].append("edit")
    return {
        "title": f"Trip plans {n}",
        "create_time": at,
        "update_time": at + 600,
        "mapping": nodes,
        "current_node": parent,
        "conversation_id": f"bench-{n}",
        "id": f"bench-{n}",
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "default_model_slug": "gpt-4o",
    }


def write_export(path: Path, megabytes: int) -> tuple[int, int]:
    """The ZIP, written as a stream; returns (conversations, bytes of conversations.json)."""
    target = megabytes * 1_000_000
    written = count = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as out:
            out.write(b"[")
            written += 1
            while written < target:
                piece = (b"," if count else b"") + json.dumps(conversation(count), ensure_ascii=False).encode()
                out.write(piece)
                written += len(piece)
                count += 1
            out.write(b"]")
        archive.writestr("user.json", "{}")
    return count, written + 1


def child(export: Path, var_dir: Path) -> None:
    """What runs in the measured process (like the worker): set up, say idle, check, import, report."""
    os.environ["MEMORA_VAR_DIR"] = str(var_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    import config.celery  # noqa: F401 — the worker has its Celery app loaded too
    from accounts.models import User
    from imports import runner
    from imports.models import ChatImport
    from imports.services import import_create_from_file

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench-import", password="bench-password")
    print("IDLE", flush=True)
    time.sleep(0.5)
    started = time.perf_counter()
    row = import_create_from_file(user=user, path=export)
    print(f"CHECKED {time.perf_counter() - started:.1f}", flush=True)
    started = time.perf_counter()
    runner.import_run(import_id=row.pk)
    row = ChatImport.objects.get(pk=row.pk)
    print(
        f"IMPORTED {time.perf_counter() - started:.1f} {row.status} {row.conversations} {row.messages} {row.skipped}",
        flush=True,
    )


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (export and database)")
    parser.add_argument("--child", nargs=2, metavar=("EXPORT", "VAR_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return 0
    load = os.getloadavg()
    print(
        f"Machine: {platform.machine()} {platform.system()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix="memora-bench-import-"))
    export = scratch / "chatgpt-export.zip"
    started = time.perf_counter()
    conversations, size = write_export(export, args.megabytes)
    print(
        f"Export: {conversations:,} conversations, conversations.json {size / 1e6:.0f} MB "
        f"({export.stat().st_size / 1e6:.0f} MB zipped), written in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    command = [sys.executable, __file__, "--child", str(export), str(scratch)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    samples: dict[str, int] = {"idle": 0, "peak": 0}
    idle = threading.Event()

    def sample() -> None:
        while process.poll() is None:
            try:
                value = rss_kb(process.pid)
            except (FileNotFoundError, ProcessLookupError):
                return
            if idle.is_set():
                samples["peak"] = max(samples["peak"], value)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert process.stdout is not None
    for line in process.stdout:
        word, *rest = line.split()
        if word == "IDLE":
            samples["idle"] = rss_kb(process.pid)
            idle.set()
        elif word == "CHECKED":
            print(f"Check and preview (before the upload is answered): {rest[0]} s", flush=True)
        elif word == "IMPORTED":
            seconds, status, done, messages, skipped = rest
            print(
                f"Import ({status}): {int(done):,} conversations, {int(messages):,} messages, {skipped} skipped, "
                f"in {seconds} s",
                flush=True,
            )
    process.wait()
    sampler.join()
    peak, base = samples["peak"], samples["idle"]
    print(
        f"Worker memory (VmRSS): idle {base / 1024:.0f} MB, peak {peak / 1024:.0f} MB, "
        f"{(peak - base) / 1024:.0f} MB above idle"
    )
    load = os.getloadavg()
    print(f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not args.keep:
        for item in sorted(scratch.rglob("*"), reverse=True):
            item.unlink() if item.is_file() else item.rmdir()
        scratch.rmdir()
    return process.returncode


if __name__ == "__main__":
    raise SystemExit(main())
