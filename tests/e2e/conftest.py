"""A real server for browser tests: uvicorn (ASGI, WebSockets) on a scratch SQLite database, talking
to a local fake OpenAI-compatible provider that runs in this process. Chromium is Debian's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.processes import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
PORTS = range(int(os.environ.get("E2E_PORT_FIRST", "18310")), int(os.environ.get("E2E_PORT_LAST", "18399")))
SERVER_START_SECONDS = 30
PASSWORD = "correct-horse-battery-staple"


def sign_up(page: Any, base: str, username: str) -> None:
    """Sign up through the form and wait until the chat page's scripts have run (Enter sends)."""
    from playwright.sync_api import expect

    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/")
    page.wait_for_load_state("load")


def reply_for(body: dict[str, Any]) -> FakeResponse:
    """Scripted provider: "long" asks for a slow 200-word reply (to watch it stream, and stop it)."""
    user_text = next((str(m.get("content", "")) for m in reversed(body["messages"]) if m["role"] == "user"), "")
    for trigger, response in SCRIPT.items():
        if trigger in user_text.lower():
            return response
    if "long" in user_text.lower():
        return FakeResponse(chunks=[f"word{i} " for i in range(200)], chunk_delay=0.03)
    return FakeResponse("Happy to help. What would you like to know?")


SCRIPT = {
    "wide code": FakeResponse(
        "Here is one:\n\n```python\n"
        "def describe(items):  # " + "a long comment that does not fit on one line " * 4 + "\n"
        "    return ', '.join(str(item) for item in items)\n```\n\nAsk if you want more."
    ),
    "small phones": FakeResponse(
        "Small phones are getting rarer, but there are still good ones. A few to look at:\n\n"
        "1. **iPhone 13 mini** — 5.4″ screen, easy to use one-handed, great camera for its size.\n"
        "2. **Google Pixel 8** — 6.2″, compact for an Android flagship, clean software.\n"
        "3. **Samsung Galaxy S24** — 6.2″, light, bright screen, long updates.\n\n"
        "If one-handed use matters most, the **13 mini** is the smallest of the three. "
        "Want me to compare battery life?"
    ),
    "battery": FakeResponse(
        "Roughly, in mixed use:\n\n| Phone | Screen | Battery |\n|---|---|---|\n"
        "| iPhone 13 mini | 5.4″ | 2,438 mAh |\n| Pixel 8 | 6.2″ | 4,575 mAh |\n| Galaxy S24 | 6.2″ | 4,000 mAh |\n\n"
        "The mini trades battery for size: expect a day of light use. "
        "See the [comparison notes](https://example.com/phones) for details."
    ),
}


@pytest.fixture(scope="session")
def provider() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    server.responder = reply_for
    yield server
    server.stop()


@pytest.fixture(scope="session")
def live_server_env(tmp_path_factory: pytest.TempPathFactory, provider: FakeOpenAIServer) -> dict[str, str]:
    """The environment of the browser tests' server: its scratch database, the fake provider."""
    var_dir = tmp_path_factory.mktemp("memora-e2e")
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(
        MEMORA_VAR_DIR=str(var_dir), LLM_BACKEND="openai", OPENAI_BASE_URL=provider.base_url, OPENAI_API_KEY="test-key",
        CHAT_MODEL="local-model", LLM_MAX_RETRIES="0", DJANGO_DEBUG="1", LOG_LEVEL="WARNING",
        CHAT_REPLY_TOKENS="500",  # so that a small provider window (test_compaction_browser) leaves room
    )  # fmt: skip
    return env


def manage(env: dict[str, str], *args: str) -> None:
    """`manage.py …` against the browser tests' server database (to set up what no page creates)."""
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


@pytest.fixture(scope="session")
def live_server_url(live_server_env: dict[str, str]) -> Iterator[str]:
    env = live_server_env
    var_dir = Path(env["MEMORA_VAR_DIR"])
    manage(env, "migrate", "--noinput", "-v0")
    port = free_port(PORTS)
    log = var_dir / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--ws", "websockets-sansio", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for_port(port, server, seconds=SERVER_START_SECONDS, log=log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(server)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Every page must pass the Content-Security-Policy: Chromium reports each violation on the console.
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not errors, errors
