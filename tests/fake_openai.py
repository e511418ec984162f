"""A local, OpenAI-compatible HTTP server for tests and benchmarks. Never touches the internet.

It implements `POST /v1/chat/completions` in both shapes the `openai` package uses:

- `"stream": true`: server-sent events, one `data: {chat.completion.chunk}` line per chunk, text split into
  chunks, tool calls streamed as fragments (index, id and name first, then pieces of the arguments),
  a final chunk with `finish_reason`, an optional usage chunk, then `data: [DONE]`;
- otherwise one `chat.completion` JSON object (a `response_format` is honoured by returning the scripted
  content as it is).

Replies are scripted with `FakeResponse` and consumed in order from `queue(...)`; when the queue is empty
`responder(body)` is asked, and by default the reply is "ok".

    with FakeOpenAIServer() as server:
        server.queue(FakeResponse("Hello there"), FakeResponse(status=500))
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")

With `context_window` set it behaves like a provider with a context window: a request whose prompt
(counted by `count_tokens`, a tokenizer-like count: words, punctuation, CJK characters, a few tokens per
message, the tool schemas) plus its `max_tokens` exceeds the window is refused with HTTP 400 and code
`context_length_exceeded`, in OpenAI's words. With `overflow="empty_stream"` an over-long *streaming*
request gets HTTP 200 and an empty stream instead, as llama.cpp's server does. Refused requests are
recorded in `requests` too, and their prompt sizes in `prompt_sizes`.

It also serves `POST /v1/embeddings`: each input gets `embed(text)` (by default `concept_vector`, a
bag of words over a few "concepts", so texts related only in meaning get close vectors); requests are
recorded in `embedding_requests`; `embedding_status` (other than 200) answers an error and
`embedding_delay` holds every answer that many seconds.

With `single_slot=True` it imitates a single-slot server (llama.cpp's with its defaults): a request that
arrives while another is being answered interrupts it (its stream ends without a `finish_reason`, counted
in `interrupted`), streams carry no usage, and a streaming request with tools gets an empty reply.
`max_in_flight` is the most requests it was answering at once; a request it is still working on after
its client gave up (a `delay_before` past the client's timeout) counts until its work ends. With
`slots=True` it answers llama.cpp's `GET /slots` (`is_processing` while it answers a request).

For benchmarks it also runs on its own and answers every request with N word tokens:

    python -m tests.fake_openai --port 18100 --tokens 200 --token-delay 0.005
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Words of the same meaning share one dimension of `concept_vector` (a stand-in for a real model); Chinese
# words are found as substrings.
CONCEPTS = [
    "peanut peanuts snickers satay nut nuts allergic allergy",
    "cat cats kitten pet vet veterinarian",
    "phone phones smartphone iphone handset 手机",
    "vegetarian meat steak burger vegan",
    "cello music orchestra concert violin rehearse pieces",
    "race marathon running training runner",
    "kid kids daughter son child children 孩子 儿子",
    "alcohol drink wine beer bar pub",
    "母亲 妈妈 血压 少盐",
    "辣 川菜 胃疼",
    "失眠 睡不着 睡眠",
]
EMBEDDING_DIMENSIONS = 24
_CONCEPT_OF = {word: i for i, words in enumerate(CONCEPTS) for word in words.split()}


def concept_vector(text: str) -> list[float]:
    """A deterministic embedding: one dimension per concept named in `text`, other words hashed thinly."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    lowered = text.lower()
    for word, i in _CONCEPT_OF.items():
        if not word.isascii() and word in lowered:
            vector[i] += 1.0
    spare = EMBEDDING_DIMENSIONS - len(CONCEPTS)
    for word in re.findall(r"[a-z0-9]+", lowered):
        if word in _CONCEPT_OF:
            vector[_CONCEPT_OF[word]] += 1.0
        else:
            vector[len(CONCEPTS) + sum(map(ord, word)) % spare] += 0.1
    return vector


#: upper bound for a `hang`, so a forgotten server never holds a test forever
HANG_SECONDS = 60.0


@dataclass
class FakeResponse:
    """One scripted reply.

    - `text` is split into word-sized chunks unless `chunks` gives them explicitly;
    - `tool_calls`: `{"id", "name", "arguments"}` dicts (or the OpenAI `{"id", "function": {...}}` shape);
      in a stream each call's arguments arrive in several fragments;
    - `status` other than 200 answers an OpenAI-style error body (`error_body` to choose it);
    - `delay_before` seconds before the response starts, `chunk_delay` between stream chunks;
    - `hang`: send what is scripted (nothing by default), then hold the connection without finishing,
      so the client runs into its timeout;
    - `raw`: answer this body as it is (with status 200) instead of a well-formed reply: garbage;
    - `cut`: end the stream cleanly before its final chunk (no `finish_reason`, no `[DONE]`), like a
      provider that drops a reply half-way;
    - `ping_every`: while a stream hangs, send a `: ping` comment this often (llama.cpp's server sends
      one every 15 s), so only a wall-clock deadline ends it;
    - `tool_style`: how streamed tool calls are cut into chunks: "openai" (id and name once, then
      argument fragments), "repeat_name" (id and complete name in every chunk, as llama.cpp does),
      "no_ids" (no ids at all), "index_zero" (every parallel call at index 0, each with its own id);
    - `finish_reason`: overrides the final chunk's (or the completion's) reason, e.g. "length";
    - `linger`: after `[DONE]`, hold the response open instead of ending its body;
    - `usage`: the usage to report (`prompt_tokens`, `completion_tokens`) instead of the counted one;
      `no_usage`: report none at all, as some servers do.
    """

    text: str = ""
    chunks: list[str] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    error_body: dict[str, Any] | None = None
    delay_before: float = 0.0
    chunk_delay: float = 0.0
    hang: bool = False
    raw: str | None = None
    cut: bool = False
    ping_every: float = 0.0
    tool_style: str = "openai"
    finish_reason: str | None = None
    linger: bool = False
    usage: dict[str, int] | None = None
    no_usage: bool = False

    def text_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        # Every character lands in exactly one chunk, so "".join(chunks) == text.
        return re.findall(r"\S+\s*|\s+", self.text)

    def full_text(self) -> str:
        return "".join(self.text_chunks())

    def normalised_tool_calls(self) -> list[dict[str, str]]:
        calls = []
        for i, call in enumerate(self.tool_calls or []):
            function = call.get("function") or {}
            calls.append(
                {
                    "id": str(call.get("id") or f"call_fake_{i}"),
                    "name": str(call.get("name") or function.get("name") or ""),
                    "arguments": str(call.get("arguments") or function.get("arguments") or "{}"),
                }
            )
        return calls


Responder = Callable[[dict[str, Any]], FakeResponse]


@dataclass
class _Stats:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


class FakeOpenAIServer:
    """A threaded HTTP server speaking enough of the OpenAI Chat Completions API for the adapter."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        context_window: int | None = None,
        overflow: str = "error",
        single_slot: bool = False,
    ) -> None:
        self.single_slot = single_slot
        # What the server states about itself: fields of its model in `GET /v1/models` (vLLM's
        # `max_model_len`), and llama.cpp's `GET /props` (None: not found).
        self.model_fields: dict[str, Any] = {}
        # The whole `GET /v1/models` list, when set (else one "fake-model" with `model_fields`); how often asked.
        self.models: list[dict[str, Any]] | None = None
        self.model_list_requests = 0
        self.props: dict[str, Any] | None = None
        # llama.cpp's `POST /tokenize` ({"content": text} → {"tokens": [...]}, counted as `count_tokens`
        # counts text); off: not found, as on most servers.
        self.tokenize = False
        self.tokenize_requests: list[dict[str, Any]] = []
        # llama.cpp's `POST /apply-template` (the chat rendered as the model reads it); off: not found.
        self.apply_template = False
        # llama.cpp's `GET /slots`; off: not found, as on llama-cpp-python and most servers.
        self.slots = False
        # The `response_format` types it takes (None: any); another is refused with HTTP 500 and
        # llama-cpp-python's validation error (it takes "text" and "json_object", the latter with a `schema`).
        self.response_formats: tuple[str, ...] | None = None
        # Imitate llama-cpp-python's ways with a window of this many tokens: `GET /openapi.json` lists its
        # routes, `POST /extras/tokenize/count` counts, `POST /v1/completions` refuses a longer prompt in
        # its words (None: none of these).
        self.llama_cpp_python_window: int | None = None
        self.completions_requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = self.interrupted = 0
        self._generation = 0
        self.host = host
        self.port = port
        self.context_window = context_window
        self.overflow = overflow  # "error" (HTTP 400) or "empty_stream" (llama.cpp, streaming requests only)
        self.prompt_sizes: list[int] = []  # count_tokens of each request's prompt, in order
        self.refused = 0
        self.responder: Responder | None = None
        self.embed: Callable[[str], list[float]] = concept_vector
        self.embedding_status = 200
        self.embedding_delay = 0.0
        self.embedding_requests: list[dict[str, Any]] = []
        self._queue: list[FakeResponse] = []
        self._stats = _Stats()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self.connections_opened = 0  # TCP connections accepted: fewer than requests when kept alive
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---
    def start(self) -> FakeOpenAIServer:
        httpd = _Server((self.host, self.port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes delays and hangs
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._stats.lock:
            connections = list(self._connections)
        for conn in connections:  # idle keep-alive connections would otherwise linger
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd, self._thread = None, None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # --- scripting and inspection ---
    def queue(self, *responses: FakeResponse) -> None:
        with self._stats.lock:
            self._queue.extend(responses)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the JSON bodies received so far, oldest first."""
        with self._stats.lock:
            return list(self._stats.requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of each received request (lower-case names), parallel to `requests`."""
        with self._stats.lock:
            return list(self._stats.headers)

    def reset(self) -> None:
        """Forget received requests and scripted replies."""
        with self._stats.lock:
            self._queue.clear()
            self._stats.requests.clear()
            self._stats.headers.clear()
            self.prompt_sizes.clear()
            self.refused = 0

    # --- used by the handler ---
    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        with self._stats.lock:
            self._stats.requests.append(body)
            self._stats.headers.append(headers)
            prompt = count_tokens(body)
            self.prompt_sizes.append(prompt)
            requested = prompt + int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
            if self.overflow == "empty_stream":
                # llama.cpp refuses only a prompt that alone fills its context; it shortens max_tokens to
                # what is left otherwise (OpenAI and vLLM refuse when prompt + max_tokens exceed it).
                requested = prompt
            if self.context_window is not None and requested > self.context_window:
                self.refused += 1
                return _overflow_response(self.context_window, requested, body, self.overflow)
            scripted = self._queue.pop(0) if self._queue else None
        if scripted is not None:
            return scripted
        if self.responder is None:
            return FakeResponse("ok")
        try:
            return self.responder(body) or FakeResponse("ok")
        except Exception as exc:  # a broken responder shows up as a readable provider error, not a reset
            return FakeResponse(status=500, error_body=_error_body(f"The test responder failed: {exc!r}", "fake"))

    def _arrive(self) -> int:
        """A request starts being answered; returns its generation (a newer one interrupts it)."""
        with self._stats.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._generation += 1
            return self._generation

    def _depart(self, done: list[bool]) -> None:
        with self._stats.lock:
            if not done:
                done.append(True)
                self.in_flight -= 1

    def _superseded(self, generation: int) -> bool:
        """A single-slot server drops the reply it is writing when a newer request arrives."""
        with self._stats.lock:
            if self.single_slot and generation != self._generation:
                self.interrupted += 1
                return True
            return False

    def _next_id(self) -> str:
        return f"chatcmpl-fake-{next(self._ids)}"

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._stats.lock:
            if add:
                self._connections.add(conn)
                self.connections_opened += 1
            else:
                self._connections.discard(conn)

    def _wait(self, seconds: float) -> bool:
        """Sleep, but wake up when the server stops. True when stopping."""
        if seconds <= 0:
            return self._stopping.is_set()
        return self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of concurrent streams must not be refused
    allow_reuse_address = True
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client hanging up (timeout, cancelled stream) is routine here
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections close on their own
    disable_nagle_algorithm = True  # small SSE writes must not wait for ACKs (adds ~40 ms stalls)
    server: _Server
    generation: int  # this request's, for a single-slot server
    done: list[bool]  # not empty once the request stopped counting as in flight

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # --- routes ---
    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/").endswith("/models"):
            fake.model_list_requests += 1
            model = {"id": "fake-model", "object": "model", "owned_by": "fake", **fake.model_fields}
            listed = fake.models if fake.models is not None else [model]
            self._send_json(200, {"object": "list", "data": listed})
        elif self.path.rstrip("/") == "/props" and fake.props is not None:
            self._send_json(200, fake.props)
        elif self.path == "/openapi.json" and fake.llama_cpp_python_window:
            self._send_json(200, {"paths": {"/v1/chat/completions": {}, "/extras/tokenize/count": {}}})
        elif self.path.rstrip("/") == "/slots" and fake.slots:
            self._send_raw(json.dumps([{"id": 0, "is_processing": fake.in_flight > 0}]), "application/json")
        else:
            self._send_json(404, _error_body("Not found.", "invalid_request_error"))

    def do_POST(self) -> None:
        if self.server.fake.llama_cpp_python_window and self.path in ("/extras/tokenize/count", "/v1/completions"):
            self._llama_cpp_python(self.server.fake.llama_cpp_python_window)
            return
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings()
            return
        if self.path.rstrip("/") == "/apply-template" and self.server.fake.apply_template:
            self._apply_template()
            return
        if self.path.rstrip("/") == "/tokenize" and self.server.fake.tokenize:
            self._tokenize()
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error_body("Not found.", "invalid_request_error"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, _error_body("The request body is not valid JSON.", "invalid_request_error"))
            return
        fake = self.server.fake
        asked = (body.get("response_format") or {}).get("type") if isinstance(body, dict) else None
        if asked and fake.response_formats is not None and asked not in fake.response_formats:
            with fake._stats.lock:
                fake._stats.requests.append(body)
                fake._stats.headers.append({k.lower(): v for k, v in self.headers.items()})
            allowed = " or ".join(repr(t) for t in fake.response_formats)
            where = "('body', 'response_format', 'type')"
            said = f"1 validation error: {{'loc': {where}, 'msg': \"Input should be {allowed}\"}}"
            self._send_json(500, _error_body(said, "internal_server_error"))
            return
        response = fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        self.generation, self.done = fake._arrive(), []
        if fake.single_slot and body.get("stream"):
            body = {k: v for k, v in body.items() if k != "stream_options"}  # no usage in streams
            if body.get("tools"):
                response = FakeResponse("")  # what llama.cpp's function-calling format answers
        try:
            self._reply(fake, body, response)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away (cancelled stream, timeout)
        finally:
            fake._depart(self.done)

    def _llama_cpp_python(self, window: int) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        text = str(body.get("input") or body.get("prompt") or "")
        count = len(_TOKEN.findall(text))
        if self.path == "/extras/tokenize/count":
            self._send_json(200, {"count": count})
            return
        self.server.fake.completions_requests.append(body)
        if count >= window:
            said = f"This model's maximum context length is {window} tokens, however you requested {count} tokens"
            self._send_json(400, _error_body(said, "invalid_request_error"))
        else:
            self._send_json(200, {"choices": [{"text": "a", "finish_reason": "length"}]})

    def _embeddings(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with fake._stats.lock:
            fake.embedding_requests.append(body)
        if fake._wait(fake.embedding_delay):
            return
        if fake.embedding_status != 200:
            self._send_json(fake.embedding_status, _error_body("Scripted embeddings failure.", "server_error"))
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": fake.embed(str(t))} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage})

    # --- replies ---
    def _reply(self, fake: FakeOpenAIServer, body: dict[str, Any], response: FakeResponse) -> None:
        if fake._wait(response.delay_before):
            return
        if response.status != 200:
            error = response.error_body or _error_body(f"Scripted failure (HTTP {response.status}).", "server_error")
            self._send_json(response.status, error)
            return
        if response.raw is not None:
            self._send_raw(response.raw, "text/event-stream" if body.get("stream") else "application/json")
            return
        if body.get("stream"):
            self._stream(fake, body, response)
            return
        if response.hang:
            self._hang(fake)
            return
        if fake._superseded(self.generation):
            response = FakeResponse("", finish_reason="stop")  # the answer was dropped half-way
        fake._depart(self.done)
        self._send_json(200, _completion(fake._next_id(), body, response))

    def _stream(self, fake: FakeOpenAIServer, body: dict[str, Any], response: FakeResponse) -> None:
        chunks = list(_stream_chunks(fake._next_id(), body, response))
        if response.hang and not response.text_chunks() and not response.tool_calls and not response.ping_every:
            self._hang(fake)  # nothing scripted: stall before the response starts
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # With `hang` or `cut`, everything but the final chunk is sent, then the stream stalls or ends.
        body_chunks = [c for c in chunks if c["choices"] and not c["choices"][0]["finish_reason"]]
        body_chunks = body_chunks if response.hang or response.cut else chunks
        for i, chunk in enumerate(body_chunks):
            if i and response.chunk_delay and fake._wait(response.chunk_delay):
                return
            if fake._superseded(self.generation):  # cut off by a newer request: end without a finish
                self._write_chunk("")
                self.close_connection = True
                return
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n")
        fake._depart(self.done)
        if response.hang and response.ping_every:
            self._ping_forever(fake, response.ping_every)
            return
        if response.hang:
            self._hang(fake)
            return
        if response.cut:
            self._write_chunk("")
            self.close_connection = True
            return
        self._write_chunk("data: [DONE]\n\n")
        if response.linger:
            self._hang(fake)
            return
        self._write_chunk("")  # the terminating zero-length chunk

    def _ping_forever(self, fake: FakeOpenAIServer, every: float) -> None:
        until = time.monotonic() + HANG_SECONDS
        while time.monotonic() < until and not fake._wait(every):
            self._write_chunk(": ping\n\n")
        self.close_connection = True

    def _hang(self, fake: FakeOpenAIServer) -> None:
        fake._wait(HANG_SECONDS)
        self.close_connection = True

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _apply_template(self) -> None:
        """llama.cpp's rendering of a chat: ChatML, HTML-escaped as Jinja's autoescape does."""
        import html

        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        parts = [
            f"<|im_start|>{m['role']}\n{html.escape(str(m.get('content') or ''))}<|im_end|>" for m in body["messages"]
        ]
        self._send_json(200, {"prompt": "\n".join(parts) + "\n<|im_start|>assistant\n"})

    def _tokenize(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if "content" not in body:
            self._send_json(400, _error_body("'content' is required.", "invalid_request_error"))
            return
        self.server.fake.tokenize_requests.append(body)
        self._send_json(200, {"tokens": list(range(len(_TOKEN.findall(str(body["content"])))))})

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(json.dumps(payload), "application/json", status)

    def _send_raw(self, text: str, content_type: str, status: int = 200) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|\w+|[^\w\s]")


def summary_request(body: dict[str, Any]) -> bool:
    """Whether a request asks for a conversation summary (chat.turn.summary), streamed like a chat reply."""
    return any("The messages to summarize:" in str(m.get("content") or "") for m in body.get("messages") or [])


def count_tokens(body: dict[str, Any]) -> int:
    """The prompt size of a request as this fake provider counts it: a tokenizer-like count (words,
    punctuation marks and CJK characters are one token each), 4 tokens per message, the tool schemas."""

    def count(text: str) -> int:
        return len(_TOKEN.findall(text))

    total = 3
    for message in body.get("messages") or []:
        content = message.get("content")
        total += 4 + count(content if isinstance(content, str) else json.dumps(content or ""))
        for call in message.get("tool_calls") or []:
            total += 4 + count(json.dumps(call))
    for tool in body.get("tools") or []:
        total += count(json.dumps(tool))
    return total


def _overflow_response(window: int, requested: int, body: dict[str, Any], overflow: str) -> FakeResponse:
    if overflow == "empty_stream" and body.get("stream"):
        return FakeResponse(raw="")
    message = (
        f"This model's maximum context length is {window} tokens. However, you requested {requested} tokens. "
        "Please reduce the length of the messages."
    )
    code = "context_length_exceeded"
    error = {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}
    return FakeResponse(status=400, error_body={"error": error})


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _chunk(chunk_id: str, body: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _split_arguments(arguments: str) -> list[str]:
    """Cut a tool call's JSON arguments into a few fragments, as real providers do."""
    if len(arguments) <= 1:
        return [arguments]
    step = max(1, len(arguments) // 3)
    return [arguments[i : i + step] for i in range(0, len(arguments), step)]


def _stream_chunks(chunk_id: str, body: dict[str, Any], response: FakeResponse) -> Iterator[dict[str, Any]]:
    yield _chunk(chunk_id, body, {"role": "assistant", "content": "", "refusal": None})
    for text in response.text_chunks():
        yield _chunk(chunk_id, body, {"content": text})
    calls = response.normalised_tool_calls()
    for index, call in enumerate(calls):
        yield from _tool_call_chunks(chunk_id, body, index, call, response.tool_style)
    final = _chunk(chunk_id, body, {}, finish=response.finish_reason or ("tool_calls" if calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage") and not response.no_usage:
        yield final
        final = {**_chunk(chunk_id, body, {}), "choices": [], "usage": _usage(body, response)}
    yield final


def _tool_call_chunks(
    chunk_id: str, body: dict[str, Any], index: int, call: dict[str, str], style: str
) -> Iterator[dict[str, Any]]:
    """One streamed tool call, cut into chunks the way `style` names (see FakeResponse)."""
    pieces = _split_arguments(call["arguments"])
    if style == "repeat_name":
        for piece in pieces:
            function = {"name": call["name"], "arguments": piece}
            part = {"index": index, "id": call["id"], "type": "function", "function": function}
            yield _chunk(chunk_id, body, {"tool_calls": [part]})
        return
    position = 0 if style == "index_zero" else index
    head: dict[str, Any] = {"index": position, "type": "function", "function": {"name": call["name"], "arguments": ""}}
    if style != "no_ids":
        head["id"] = call["id"]
    yield _chunk(chunk_id, body, {"tool_calls": [head]})
    for piece in pieces:
        yield _chunk(chunk_id, body, {"tool_calls": [{"index": position, "function": {"arguments": piece}}]})


def context_length_refusal(tokens: int, window: int) -> FakeResponse:
    """llama.cpp's (and OpenAI's) answer to a request larger than the context window."""
    message = f"Requested tokens ({tokens}) exceed context window of {window}"
    error = {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
    return FakeResponse(status=400, error_body={"error": {**error, "param": "messages"}})


def _usage(body: dict[str, Any], response: FakeResponse) -> dict[str, int]:
    if response.usage is not None:
        return {**response.usage, "total_tokens": sum(response.usage.values())}
    prompt = count_tokens(body)
    completion = len(response.text_chunks())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(completion_id: str, body: dict[str, Any], response: FakeResponse) -> dict[str, Any]:
    calls = response.normalised_tool_calls()
    content = response.full_text() if response.text or response.chunks or not calls else None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": response.finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        **({} if response.no_usage else {"usage": _usage(body, response)}),
    }


def _benchmark_responder(tokens: int, token_delay: float, first_token_delay: float) -> Responder:
    chunks = [f"word{i} " for i in range(tokens)]

    def respond(body: dict[str, Any]) -> FakeResponse:
        return FakeResponse(chunks=chunks, chunk_delay=token_delay, delay_before=first_token_delay)

    return respond


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible server answering N word tokens.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=200, help="word tokens per reply")
    parser.add_argument("--token-delay", type=float, default=0.005, help="seconds between stream chunks")
    parser.add_argument("--first-token-delay", type=float, default=0.0, help="seconds before the first chunk")
    parser.add_argument("--context-window", type=int, default=0, help="refuse longer requests (0: no window)")
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop after this long (0: until interrupted)")
    args = parser.parse_args(argv)

    server = FakeOpenAIServer(args.host, args.port, context_window=args.context_window or None)
    server.responder = _benchmark_responder(args.tokens, args.token_delay, args.first_token_delay)
    server.start()
    print(f"fake OpenAI server on {server.base_url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait(args.max_seconds or None)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
