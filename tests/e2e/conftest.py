"""Fixtures for the browser tests: a real server (tests/e2e/browser.py) talking to a local fake
OpenAI-compatible provider that runs in this process, Debian's Chromium, and a screenshot folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS_VARIABLE, manage, running_stack, stack_env
from tests.fake_openai import FakeOpenAIServer, FakeResponse


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
    "tulip bulbs": FakeResponse(  # as the offline demo model frames its replies
        "(Offline demo model — no AI provider is configured.) You said: “When should I plant tulip bulbs?”. "
        "Set OPENAI_API_KEY or OPENAI_BASE_URL to talk to a real model."
    ),
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
    "provider trouble": FakeResponse(
        status=503,
        error_body={"error": {"message": "upstream overloaded: shard 7 queue depth 981", "type": "server_error"}},
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
def live_server_settings(tmp_path_factory: pytest.TempPathFactory, provider: FakeOpenAIServer) -> dict[str, str]:
    """The browser tests' server: its scratch folder and the fake provider (extra environment variables)."""
    return {
        "MEMORA_VAR_DIR": str(tmp_path_factory.mktemp("memora-e2e")),
        "LLM_BACKEND": "openai", "OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "test-key",
        "CHAT_MODEL": "local-model", "LLM_MAX_RETRIES": "0",
        "CHAT_REPLY_TOKENS": "500",  # so that a small provider window (test_compaction_browser) leaves room
    }  # fmt: skip


@pytest.fixture(scope="session")
def live_server_env(live_server_settings: dict[str, str]) -> dict[str, str]:
    """The server's whole environment, for `manage.py` against its database (tests.e2e.browser.manage)."""
    return stack_env(Path(live_server_settings["MEMORA_VAR_DIR"]), live_server_settings)


@pytest.fixture(scope="session")
def live_server_url(live_server_settings: dict[str, str]) -> Iterator[str]:
    with running_stack(Path(live_server_settings["MEMORA_VAR_DIR"]), live_server_settings) as url:
        yield url


@pytest.fixture(scope="session")
def demo_stack_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`make run` as the README's reader gets it: the offline demo model, a real Celery worker for background
    extraction, and the demo account (created before anyone signs up, as `make run` does). One stack for every
    module that needs nothing else: each signs up users of its own, so they never see each other's data."""
    folder, settings = tmp_path_factory.mktemp("memora-demo"), {"LLM_BACKEND": "demo"}
    with running_stack(folder, settings, worker=True) as url:
        manage(stack_env(folder, settings), "ensure_demo_user")
        yield url


@pytest.fixture(scope="session")
def demo_web_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The offline demo model without a worker: only what the web process does (a flush when asked to
    remember) changes memory, never a background run. Shared like `demo_stack_url`."""
    with running_stack(tmp_path_factory.mktemp("memora-demo-web"), {"LLM_BACKEND": "demo"}) as url:
        yield url


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests save their screenshots: a temporary folder, or MEMORA_SCREENSHOTS_DIR when set
    (`make screenshots` refreshes docs/screenshots/ that way)."""
    chosen = os.environ.get(SCREENSHOTS_VARIABLE, "").strip()
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# What a browser set to Chinese asks for (Accept-Language), for the tests that read a page in both languages.
ACCEPT_LANGUAGE = {"en": {}, "zh": {"Accept-Language": "zh-CN,zh;q=0.9"}}


@pytest.fixture
def reader(browser: Any) -> Iterator[Callable[..., Any]]:
    """Opens a page for a reader whose browser asks for `lang` ("en" or "zh"), in a context of its own
    (1280×800 unless `viewport` says otherwise; further options go to the context), closed after the test.
    `timeout` is the page's default for actions."""
    contexts: list[Any] = []

    def open_page(lang: str, *, timeout: int = 15_000, **options: Any) -> Any:
        options.setdefault("viewport", {"width": 1280, "height": 800})
        context = browser.new_context(extra_http_headers=ACCEPT_LANGUAGE[lang], **options)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(timeout)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(15_000)
    # Assertions wait as long as actions: on a loaded machine (CI beside other jobs) a turn's start, which
    # waits for SQLite's single writer while the worker extracts, can pass Playwright's 5 s default.
    expect.set_options(timeout=15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # Every page must pass the Content-Security-Policy: Chromium reports each violation on the console.
    # Each is kept with where it happened: the violating script or style and the page's address.
    def csp_violation(message: Any) -> None:
        if "Content Security Policy" in message.text:
            errors.append(f"{message.text[-60:]} @ {message.location} {page.url}")

    page.on("console", csp_violation)
    yield page
    context.close()
    assert not errors, errors
