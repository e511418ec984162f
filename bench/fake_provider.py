"""The benchmarks' provider: tests.fake_openai's replies, served by one asyncio event loop.

    python bench/fake_provider.py PORT SECONDS

The reply's length and pace are read from the last user message ("bench tokens=20 delay=0.005"), so
one server serves every part of a benchmark. The bytes are tests.fake_openai's (same chunks, same
chunked SSE framing); only the serving differs. tests.fake_openai runs a thread per connection, which
suits tests but not 200 streams on a small machine: its threads' GIL contention made the provider
itself slow to start a reply, and took CPU that a real, remote provider would not take from the
server being measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.fake_openai import FakeResponse, _completion, _stream_chunks

TOKENS = re.compile(r"tokens=(\d+)")
DELAY = re.compile(r"delay=([\d.]+)")


def reply_for(body: dict) -> FakeResponse:
    text = next((m.get("content") or "" for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    tokens, delay = TOKENS.search(text), DELAY.search(text)
    count = int(tokens.group(1)) if tokens else 5
    return FakeResponse(chunks=[f"word{i} " for i in range(count)], chunk_delay=float(delay.group(1)) if delay else 0)


def chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class Provider:
    def __init__(self) -> None:
        self.ids = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:  # each chunk goes out at once, as from a real provider
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:  # keep-alive: one request after another
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
                length = int(next((v for k, v in headers.items() if k.strip().lower() == "content-length"), "0"))
                body = json.loads(await reader.readexactly(length) or b"{}")
                await self.reply(body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def reply(self, body: dict, writer: asyncio.StreamWriter) -> None:
        self.ids += 1
        response, reply_id = reply_for(body), f"chatcmpl-bench-{self.ids}"
        if not body.get("stream"):
            data = json.dumps(_completion(reply_id, body, response)).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for i, part in enumerate(_stream_chunks(reply_id, body, response)):
            if i and response.chunk_delay:
                await asyncio.sleep(response.chunk_delay)
            writer.write(chunk(f"data: {json.dumps(part)}\n\n"))
            await writer.drain()
        writer.write(chunk("data: [DONE]\n\n") + chunk(""))
        await writer.drain()


async def main(port: int, seconds: float) -> None:
    server = await asyncio.start_server(Provider().serve, "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    async with server:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
