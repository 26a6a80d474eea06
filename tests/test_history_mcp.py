"""`diff_knowledge_article` over a real MCP client: the diff, `gone` and `invalid`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_harness import stdio_client

from kbes import SimulatedClock, format_timestamp, open_store
from kbes.server.mcp_server import KbesMCP
from kbes.tools import HISTORY_TOOLS, TOOLS
from kbes.tools.wire import ArticleResult, ReadRequest

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def build(db: Path) -> dict[str, str]:
    """Two published articles read at 09:00: one saved at 09:05, one unpublished at 09:05."""
    clock = SimulatedClock(START)
    store = open_store(db, clock=clock)
    kb = store.create_knowledge_base("Support")
    saved = store.add_article(kb, "VPN", "Install.\nConnect to vpn.example.\nDone.", publish=True)
    gone = store.add_article(kb, "Fax", "Faxes go through the portal.", publish=True)
    cited = TOOLS["read_knowledge_article"].run(
        store, ReadRequest(knowledge_base_id=str(kb), article_id=str(saved)), None
    )
    assert isinstance(cited, ArticleResult)
    clock.advance(timedelta(minutes=5))
    store.save_article(kb, saved, content="Install.\nConnect to vpn2.example.\nDone.")
    store.unpublish_article(kb, gone)
    store.close()
    return {
        "kb": str(kb),
        "saved": str(saved),
        "gone": str(gone),
        "cited": cited.citation.updated_at,
        "saved_at": "2026-11-30T09:05:00.000000Z",
    }


async def exercise(client: Client, ids: dict[str, str]) -> dict[str, Any]:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}

    async def diff(article: str, since: str) -> Any:
        return await client.call_tool(
            "diff_knowledge_article",
            {"knowledge_base_id": ids["kb"], "article_id": article, "since_version": since},
        )

    cited = datetime.fromisoformat(ids["cited"].replace("Z", "+00:00"))
    one_microsecond_off = format_timestamp(cited + timedelta(microseconds=1))
    return {
        "listed": listed,
        "diff": await diff(ids["saved"], ids["cited"]),
        "gone": await diff(ids["gone"], ids["cited"]),
        "invalid": await diff(ids["saved"], one_microsecond_off),
    }


def check(outcome: dict[str, Any], ids: dict[str, str]) -> None:
    tool = outcome["listed"]["diff_knowledge_article"]
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.destructive_hint is False
    assert sorted(tool.input_schema["required"]) == [
        "article_id",
        "knowledge_base_id",
        "since_version",
    ]

    diff = outcome["diff"]
    assert not diff.is_error
    body = diff.structured_content
    assert body == json.loads(diff.content[0].text)
    assert body["changed"] is True
    assert body["since_version"] == ids["cited"]
    assert body["citation"] == {
        "knowledge_base_id": ids["kb"],
        "article_id": ids["saved"],
        "updated_at": ids["saved_at"],
    }
    assert [c["type"] for c in body["changes"]] == ["saved"]
    assert body["diff"].startswith(
        f"--- {ids['saved']}@{ids['cited']}\n+++ {ids['saved']}@{ids['saved_at']}\n"
    )
    assert "-Connect to vpn.example.\n+Connect to vpn2.example.\n" in body["diff"]

    gone = outcome["gone"]
    assert gone.is_error
    error = json.loads(gone.content[0].text)
    assert error["code"] == "gone"
    assert error["unpublished_at"] == ids["saved_at"]

    invalid = outcome["invalid"]
    assert invalid.is_error
    error = json.loads(invalid.content[0].text)
    assert error["code"] == "invalid"
    assert "never had a published version" in error["message"]


def run(coroutine: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    return anyio.run(coroutine)


def test_diff_tool_over_an_in_process_mcp_client(tmp_path: Path) -> None:
    ids = build(tmp_path / "kbes.sqlite")
    store = open_store(tmp_path / "kbes.sqlite")
    server = KbesMCP(store, grants=None, tools=[*TOOLS.values(), *HISTORY_TOOLS])

    async def session() -> dict[str, Any]:
        async with Client(server.server) as client:
            return await exercise(client, ids)

    try:
        check(run(session), ids)
    finally:
        store.close()


@pytest.mark.slow
def test_kbes_serve_history_tools_over_stdio(tmp_path: Path) -> None:
    """The acceptance path: `kbes serve --history-tools` in its own process, the SDK's client
    over stdio."""
    db = tmp_path / "kbes.sqlite"
    ids = build(db)

    async def session() -> dict[str, Any]:
        async with stdio_client(db, "--grant", ids["kb"], "--history-tools") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return {"names": names, **await exercise(client, ids)}

    outcome = run(session)
    assert outcome["names"] == [*TOOLS, "diff_knowledge_article"]
    check(outcome, ids)


def test_the_default_server_keeps_to_the_four_tools(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kbes.sqlite")
    server = KbesMCP(store, grants=None)

    async def session() -> dict[str, Any]:
        async with Client(server.server) as client:
            return {"names": [tool.name for tool in (await client.list_tools()).tools]}

    try:
        assert run(session)["names"] == list(TOOLS)
    finally:
        store.close()
