"""Settings → API tokens and Settings → Memory with connected tools (SPEC §9): a token's scopes are
chosen on the page and shown in the list; what a tool read (over MCP and /v1) shows per token and per
memory, with the tool's name; axe finds nothing serious; the same in Chinese."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx2
import openai
import pytest

from tests.e2e.axe import audit
from tests.e2e.browser import sign_up
from tests.e2e.test_chinese import assert_chinese, audit_phone, zh_page  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.needs_memory]


def create_token(page: Any, base: str, name: str, scopes: list[str] | None = None) -> str:
    page.goto(f"{base}/settings/tokens/")
    page.fill("#id_name", name)
    if scopes is not None:
        for box in page.locator("input[name=scopes]").all():
            if box.get_attribute("value") in scopes:
                box.check()
            else:
                box.uncheck()
    page.locator("form.token-create button[type=submit]").click()
    return str(page.locator("#new-token").inner_text()).strip()


def mcp_search(base: str, token: str, client: str, query: str) -> None:
    """The official MCP client, in a thread of its own (Playwright's sync API holds this one's loop)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    async def run() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write, client_info=Implementation(name=client, version="1")) as session,
        ):
            await session.initialize()
            result = await session.call_tool("search_memories", {"query": query})
            assert not result.is_error, result.content

    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _collect(errors, lambda: asyncio.run(run())))
    thread.start()
    thread.join(60)
    assert not errors, errors


def _collect(errors: list[BaseException], call: Any) -> None:
    try:
        call()
    except BaseException as exc:
        errors.append(exc)


def connect_tools(
    page: Any, base: str, *, memory: str, query: str, mcp_client: str, v1_client: str, names: tuple[str, str]
) -> None:
    """A full token adds `memory` and chats through /v1 as `v1_client`; a read-only token searches over MCP."""
    full = create_token(page, base, names[0])
    with httpx2.Client(headers={"Authorization": f"Bearer {full}"}) as http:
        assert http.post(f"{base}/api/memories", json={"content": memory}).status_code == 201
    reader = create_token(page, base, names[1], ["memory:read"])
    mcp_search(base, reader, mcp_client, query)
    api = openai.OpenAI(base_url=f"{base}/v1", api_key=full, default_headers={"User-Agent": v1_client}, max_retries=0)
    api.chat.completions.create(model="local-model", messages=[{"role": "user", "content": query}])


def test_token_scopes_and_the_read_log_on_their_pages(page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    base = live_server_url
    sign_up(page, base, "toolsmith")
    connect_tools(page, base, memory="I am allergic to peanuts.", query="peanut allergy", mcp_client="Zed",
                  v1_client="Cursor/0.42", names=("laptop", "editor"))  # fmt: skip
    page.goto(f"{base}/settings/tokens/")
    editor = page.locator("tr", has_text="editor")
    expect(editor.locator(".token-scope-list")).to_have_text("memory:read")
    expect(page.locator("tr", has_text="laptop").locator(".token-scope-list")).to_have_text("everything")
    expect(editor.locator(".token-reads")).to_contain_text("Zed read 1 memory at")
    expect(page.locator("tr", has_text="laptop")).to_contain_text("last by Cursor/0.42")
    audit(page, "tokens with scopes and reads")

    page.goto(f"{base}/settings/memory/")
    row = page.locator(".memory-row", has_text="I am allergic to peanuts.")
    expect(row.locator(".memory-read")).to_contain_text("read by a tool at")
    reads = page.locator(".memory-reads")
    expect(reads).to_contain_text("Zed read 1 memory at")
    expect(reads).to_contain_text("Cursor/0.42 read 1 memory at")
    audit(page, "memory page with the read log")


def test_a_token_without_scopes_is_refused_on_the_page(page: Any, live_server_url: str) -> None:
    from playwright.sync_api import expect

    sign_up(page, live_server_url, "noscopes")
    page.goto(f"{live_server_url}/settings/tokens/")
    for box in page.locator("input[name=scopes]").all():
        box.uncheck()
    page.locator("form.token-create button[type=submit]").click()
    expect(page.locator(".token-scopes .field-errors")).to_contain_text("Tick at least one")
    expect(page.locator("#new-token")).to_have_count(0)


def test_the_pages_are_chinese(zh_page: Any, live_server_url: str) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page, base = zh_page, live_server_url
    sign_up(page, base, "小工")
    connect_tools(page, base, memory="我对花生过敏。", query="花生过敏", mcp_client="光标", v1_client="Cursor/0.42",
                  names=("笔记本", "编辑器"))  # fmt: skip
    page.goto(f"{base}/settings/tokens/")
    expect(page.locator(".token-reads").first).to_contain_text("光标")
    assert_chinese(page, "tokens with scopes and reads")
    audit_phone(page, "tokens with scopes and reads")
    page.goto(f"{base}/settings/memory/")
    expect(page.locator(".memory-reads")).to_contain_text("Cursor/0.42")
    assert_chinese(page, "memory page with the read log")
    audit_phone(page, "memory page with the read log")
