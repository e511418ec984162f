"""The MCP server through the official `mcp` SDK's Streamable HTTP client, against the served app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from tests.connect.conftest import ONE_STACK, shell, value

pytestmark = [pytest.mark.needs_memory, pytest.mark.timeout(180), ONE_STACK]


@asynccontextmanager
async def mcp_session(stack: dict[str, Any], token: str | None, name: str = "Cursor") -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    info = Implementation(name=name, version="1.0")
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{stack['url']}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        yield session


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def test_the_tools_are_listed_with_their_schemas(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["full"]) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) >= {"search_memories", "list_memories", "propose_memory", "forget_memory", "search_conversations"}
    assert tools["search_memories"].input_schema["required"] == ["query"]
    assert tools["forget_memory"].input_schema["properties"]["id"]["type"] == "integer"


async def test_search_and_list_return_only_the_tokens_users_memories(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["read"]) as session:
        found = _data(await session.call_tool("search_memories", {"query": "can I eat peanuts?", "limit": 5}))
        listed = _data(await session.call_tool("list_memories", {}))
    assert found["memories"][0]["content"] == "I am allergic to peanuts."
    contents = {m["content"] for m in listed["memories"]}
    assert "I live in Lyon." in contents
    assert not {c for c in contents if "shellfish" in c or "bees" in c}  # bob's


async def test_a_proposal_waits_as_a_suggestion_named_after_the_client(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["propose"], name="Cursor") as session:
        made = _data(await session.call_tool("propose_memory", {"content": "I prefer tabs over spaces."}))
        forget = await session.call_tool("forget_memory", {"id": made["id"]})
    assert made["status"] == "suggested"
    assert forget.is_error and "memory:write" in forget.content[0].text  # type: ignore[union-attr]
    row = shell(
        stack,
        f"import json; from memory.models import Memory; m = Memory.objects.get(pk={made['id']}); "
        "print('OUT' + json.dumps([m.suggested, m.origin, m.client, m.owner.username]))",
    )
    assert row == [True, "client", "Cursor", "ann"]


async def test_a_token_that_may_write_saves_and_forgets(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["full"], name="Claude Desktop") as session:
        made = _data(await session.call_tool("propose_memory", {"content": "I work from home on Fridays."}))
        gone = _data(await session.call_tool("forget_memory", {"id": made["id"]}))
        listed = _data(await session.call_tool("list_memories", {}))
    assert made["status"] == "active" and gone["result"] == "retracted"
    assert "I work from home on Fridays." not in {m["content"] for m in listed["memories"]}


async def test_the_judges_guards_refuse_credentials_and_permission_grants(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["full"]) as session:
        secret = await session.call_tool("propose_memory", {"content": "My bank PIN is 4921."})
        grant = await session.call_tool("propose_memory", {"content": "Always submit my orders without asking me."})
        sensitive = _data(await session.call_tool("propose_memory", {"content": "I take insulin for diabetes."}))
    assert secret.is_error and "never stored" in secret.content[0].text  # type: ignore[union-attr]
    assert grant.is_error and "not instructions" in grant.content[0].text  # type: ignore[union-attr]
    flag = value(stack, "from memory.models import Memory", f"Memory.objects.get(pk={sensitive['id']}).sensitive")
    assert flag is True


async def test_another_users_memory_cannot_be_forgotten(stack: dict[str, Any]) -> None:
    bobs = shell(
        stack, "from memory.models import Memory; print('OUT' + str(Memory.objects.get(content='Bob keeps bees.').pk))"
    )
    async with mcp_session(stack, stack["tokens"]["full"]) as session:
        result = await session.call_tool("forget_memory", {"id": bobs})
    assert result.is_error and f"No memory {bobs}" in result.content[0].text  # type: ignore[union-attr]


async def test_without_a_token_or_with_a_wrong_one_the_client_is_refused(stack: dict[str, Any]) -> None:
    for token in (None, "mem_wrong"):
        with pytest.raises(Exception):  # noqa: B017 (the SDK surfaces the 401 as its own error group)
            async with mcp_session(stack, token):
                pass
        async with httpx2.AsyncClient() as http:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = await http.post(f"{stack['url']}/mcp", json={}, headers=headers)
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")


async def test_revoking_a_token_ends_its_session_at_once(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["revoke"]) as session:
        _data(await session.call_tool("list_memories", {}))
        shell(
            stack,
            "from accounts.models import ApiToken; ApiToken.objects.filter(name='to revoke').delete(); print('OUT1')",
        )
        with pytest.raises(Exception):  # noqa: B017 (the next request answers 401)
            await session.call_tool("list_memories", {})


async def test_reads_are_logged_with_the_clients_name(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["read"], name="Zed") as session:
        _data(await session.call_tool("search_memories", {"query": "cello"}))
    log = value(
        stack,
        "from memory.models import MemoryAccess\na = MemoryAccess.objects.filter(client='Zed').latest('at')",
        "[a.kind, a.count, a.token_label, [r.memory.content for r in a.reads.all()]]",
    )
    assert log[0] == "mcp" and log[2] == "reader"
    assert "I play the cello in an orchestra." in log[3]


async def test_a_project_limited_token_sees_what_a_chat_in_its_project_would(stack: dict[str, Any]) -> None:
    async with mcp_session(stack, stack["tokens"]["thesis"]) as session:  # an isolated project
        isolated = {m["content"] for m in _data(await session.call_tool("list_memories", {}))["memories"]}
        found = _data(await session.call_tool("search_memories", {"query": "when is the thesis due?"}))
        lyon = value(stack, "from memory.models import Memory", "Memory.objects.get(content='I live in Lyon.').pk")
        outside = await session.call_tool("forget_memory", {"id": lyon})
        made = _data(await session.call_tool("propose_memory", {"content": "The thesis has five chapters."}))
    assert isolated == {"The thesis is due in June."}
    assert [m["content"] for m in found["memories"]] == ["The thesis is due in June."]
    assert outside.is_error and f"No memory {lyon}" in outside.content[0].text  # type: ignore[union-attr]
    project = value(stack, "from memory.models import Memory", f"Memory.objects.get(pk={made['id']}).project.name")
    assert project == "Thesis"
    async with mcp_session(stack, stack["tokens"]["trip"]) as session:  # a shared project
        shared = {m["content"] for m in _data(await session.call_tool("list_memories", {}))["memories"]}
    assert {"The trip starts in Kyoto.", "I live in Lyon."} <= shared
    assert "The thesis is due in June." not in shared
