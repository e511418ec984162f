"""Sturdier kombu transports for the Celery broker (chosen in settings with CELERY_BROKER_TRANSPORT).

`FilesystemTransport` — the embedded broker (no REDIS_URL). kombu's own filesystem transport creates a
message file and then writes it, and a reader may pick the file up in between; it also gives up on the
whole queue (an unrecoverable worker error, or a worker stuck retrying) when one file cannot be read or
decoded: a 0-byte file left by a writer that died, a half-written one, garbage. Here a message is
written under a temporary name and renamed into place (atomic on one filesystem), so readers never see
it half-written; a reader claims a file by renaming it (only one reader can), and a file that is empty
or does not decode is moved aside to `<broker>/bad/` with a warning, and the next message is read; so is
one that decodes but is not a message kombu can take (not an object, no properties or delivery tag, a
body that is not text in its stated encoding), which would otherwise fail inside kombu, in the worker.
A 0-byte file younger than a few seconds is left alone: a writer using kombu's own transport may still
be writing it.

Why keep a filesystem broker rather than, say, SQLite through kombu's SQLAlchemy transport: it needs
no extra dependency, `make run` already uses it, and with these two fixes its failure modes are the
ones of the filesystem itself; SQLite would add database locking between the web server's writes and
the broker's polling on the same machine.

`RedisTransport` — on Redis, when the connection drops while the worker holds unacknowledged messages
(a task running with acks_late, or one waiting for its countdown), kombu tries to put them back while
closing the dead connection, fails with an AttributeError instead of a connection error, and Celery
stops the worker ("Unrecoverable error: AttributeError ... 'hostname'"). Here that failure is a
connection error, which Celery handles by reconnecting; the messages stay in Redis's unacked set and
come back after the visibility timeout, and the extraction sweep (memory/extraction/recovery.py) picks their work
up within a minute anyway.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

import redis.exceptions
from kombu.transport import filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

EMPTY_GRACE_SECONDS = 5.0


class FilesystemChannel(filesystem.Channel):
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = Path(self.data_folder_out) / name
        partial = final.with_name(f".{name}.part")  # not a ".msg" name: readers skip it
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
                f.flush()
                os.fsync(f.fileno())
            os.replace(partial, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {str(final)!r} to directory") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        suffix = f".{queue}.msg"
        folder = Path(self.data_folder_in)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(suffix) or name.startswith("."):
                continue
            source = folder / name
            try:
                if source.stat().st_size == 0 and time.time() - source.stat().st_mtime < EMPTY_GRACE_SECONDS:
                    continue  # may still be being written by kombu's own transport
                claimed = self._claimed_folder() / name
                os.rename(source, claimed)  # atomic: only one reader gets it
            except OSError:
                continue  # taken by another reader meanwhile
            try:
                payload = loads(bytes_to_str(claimed.read_bytes()))
                self._check(payload)
            except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
                self._quarantine(claimed, exc)
                continue
            if not self.store_processed:
                claimed.unlink(missing_ok=True)
            return payload
        raise filesystem.Empty()

    def _check(self, payload: Any) -> None:
        """Raise ValueError unless `payload` has the shape kombu's virtual Message reads."""
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
        properties = payload.get("properties")
        if not isinstance(properties, dict) or "delivery_tag" not in properties:
            raise ValueError("no properties with a delivery tag")
        if not isinstance(properties.get("delivery_info", {}), dict):
            raise ValueError("delivery_info is not an object")
        if not isinstance(payload.get("headers") or {}, dict):
            raise ValueError("headers is not an object")
        for name in ("content-type", "content-encoding"):
            if not isinstance(payload.get(name) or "", str):
                raise ValueError(f"{name} is not a string")
        self._check_body(payload.get("body"), properties.get("body_encoding"))

    def _check_body(self, body: Any, encoding: Any) -> None:
        if not body:
            return
        if not isinstance(body, str):
            raise ValueError("the body is not a string")
        try:
            self.decode_body(body, encoding)
        except Exception as exc:
            raise ValueError(f"the body does not decode ({exc})") from exc

    def _claimed_folder(self) -> Path:
        # On the queue's filesystem, so the claiming rename is atomic (kombu uses the system temp folder).
        path = Path(self.processed_folder if self.store_processed else Path(self.data_folder_in).parent / "claimed")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _quarantine(self, path: Path, exc: Exception) -> None:
        bad = Path(self.data_folder_in).parent / "bad"
        bad.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, bad / path.name)
        except OSError:
            path.unlink(missing_ok=True)
        logger.warning("broker message %s is unreadable (%s); moved aside to %s", path.name, exc, bad)


class FilesystemTransport(filesystem.Transport):
    Channel = FilesystemChannel


class RedisChannel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection is already closed")
        return super()._connparams(asynchronous=asynchronous)


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel
