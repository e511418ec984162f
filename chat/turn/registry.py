"""The turns this process runs: one `Registry` per process (`running_turns`), and how their number paces
the replies' text (`flush_interval`, `read_pause`)."""

from __future__ import annotations

import threading
from typing import Any, Generic, Protocol, TypeVar


class Keyed(Protocol):
    key: str  # the conversation's id, as text


T = TypeVar("T", bound=Keyed)

FLUSH_SECONDS = 0.04
FLUSH_TURNS = 20  # replies of one process beyond which their text is batched longer (flush_interval)


class Registry(Generic[T]):
    """This process's running turns, by conversation id. Only the runner adds and removes them; the
    heartbeat, the pacing of the replies' text and the shutdown read them. It holds whatever has a `key`,
    so that it sits below the runner that defines a running turn."""

    def __init__(self) -> None:
        self.turns: dict[str, T] = {}
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.turns)

    def get(self, conversation_id: Any) -> T | None:
        return self.turns.get(str(conversation_id))

    def add(self, running: T) -> None:
        with self.lock:
            self.turns[running.key] = running

    def remove(self, running: T) -> None:
        """Forget `running`, unless a later turn of its conversation took its place."""
        with self.lock:
            if self.turns.get(running.key) is running:
                del self.turns[running.key]

    def all(self) -> list[T]:
        with self.lock:
            return list(self.turns.values())


running_turns: Registry[Any] = Registry()  # of chat.turn.runner.RunningTurn


def flush_interval() -> float:
    """How long a reply's text is batched before it is sent: FLUSH_SECONDS, longer when this process
    writes many replies at once (FLUSH_SECONDS per FLUSH_TURNS of them), so that the channel layer and the
    event loop keep up; the first piece of each reply still goes at once."""
    return FLUSH_SECONDS * max(1.0, len(running_turns) / FLUSH_TURNS)


def read_pause() -> float:
    """How long a reply pauses before it reads on, after it had to wait for the model's next piece: not
    at all, unless this process writes more than FLUSH_TURNS replies at once; then half of
    `flush_interval`, their text's batching time anyway. The pieces that arrive meanwhile are read
    together instead of waking the event loop once each, which saves CPU when many replies stream."""
    return flush_interval() / 2 if len(running_turns) > FLUSH_TURNS else 0.0
