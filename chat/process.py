"""This process's identity, as recorded on what it holds: a turn's lease (chat.turn.leases), a model queue
ticket (chat.model_queue), a memory extraction's claim (memory).

The owner is "host:pid:boot". A process that starts on the same host knows that what a process that is
gone (or an earlier life of its own pid) holds is dead, and can recover it at once instead of waiting for
its lease to run out. The other way round, an owner still running on this host is alive, however late.
"""

from __future__ import annotations

import os
import socket
import uuid

_BOOT = uuid.uuid4().hex[:8]


def owner() -> str:
    """This process, as recorded on the leases it holds."""
    return f"{socket.gethostname()}:{os.getpid()}:{_BOOT}"


def _local_owner(value: str) -> tuple[int, str] | None:
    """(pid, boot) of a lock owner on this host; None for another machine's (its lease decides) or garbage."""
    try:
        host, pid_text, boot = value.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return None
    return (pid, boot) if host == socket.gethostname() else None


def _running(value: str) -> bool | None:
    """Whether the owner's process runs, where this host can tell (None: another host's)."""
    local = _local_owner(value)
    if local is None:
        return None
    pid, boot = local
    if pid == os.getpid():
        return boot == _BOOT  # this pid's earlier life is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def owner_is_dead(value: str) -> bool:
    """True only when sure: the owner ran on this host and its process is gone (or this pid's earlier life)."""
    return _running(value) is False


def owner_is_alive(value: str) -> bool:
    """True only when sure: the owner is this very process, or a running process of this host."""
    return _running(value) is True
