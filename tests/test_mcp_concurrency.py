"""A hundred concurrent tool calls from several clients over streamable HTTP all complete, and
the edits among them obey compare-and-swap: one winner per version, no lost update."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp_harness import (
    HttpServer,
    Seed,
    article_events,
    body,
    error,
    http_client,
    http_server,
    seed,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS = 5


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("concurrency") / "kbes.sqlite")


@pytest.fixture(scope="module")
def server(data: Seed) -> Iterator[HttpServer]:
    with http_server(data.db, "--grant", data.kb, "--edits", "allow") as running:
        yield running


async def open_clients(stack: AsyncExitStack, url: str) -> list[Client]:
    """Several independent clients, in both protocol eras."""
    modes = ["legacy", "auto"]
    return [
        await stack.enter_async_context(http_client(url, mode=modes[n % 2])) for n in range(CLIENTS)
    ]


async def read(client: Client, data: Seed, article: str) -> dict[str, Any]:
    return body(
        await client.call_tool(
            "read_knowledge_article", {"knowledge_base_id": data.kb, "article_id": article}
        )
    )


async def test_a_hundred_concurrent_calls_all_complete_and_one_edit_wins(
    data: Seed, server: HttpServer
) -> None:
    async with AsyncExitStack() as stack:
        clients = await open_clients(stack, server.url)
        version = (await read(clients[0], data, data.password))["updated_at"]
        events_before = article_events(data.db, data.password)

        def call_for(i: int) -> tuple[str, dict[str, Any]]:
            kind = (i // CLIENTS) % 5
            if kind in (0, 1):  # 40 edits, all citing the same version
                return "edit_knowledge_article", {
                    "knowledge_base_id": data.kb,
                    "article_id": data.password,
                    "content": f"Version written by call {i}.",
                    "expected_version": version,
                    "idempotency_key": f"race-{i}",
                }
            if kind == 2:
                return "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
            if kind == 3:
                return "read_knowledge_article", {
                    "knowledge_base_id": data.kb,
                    "article_id": data.billing,
                }
            return "poll_resource_events", {
                "resource_type": "knowledge_base",
                "resource_id": data.kb,
            }

        calls = [call_for(i) for i in range(100)]
        results: list[types.CallToolResult | None] = [None] * len(calls)

        async def run(i: int) -> None:
            name, arguments = calls[i]
            results[i] = await clients[i % CLIENTS].call_tool(name, arguments)

        async with anyio.create_task_group() as group:
            for i in range(len(calls)):
                group.start_soon(run, i)

    assert all(result is not None for result in results)
    edits = [(i, r) for i, r in enumerate(results) if calls[i][0] == "edit_knowledge_article"]
    others = [r for i, r in enumerate(results) if calls[i][0] != "edit_knowledge_article"]
    assert len(edits) == 40 and len(others) == 60
    assert all(r is not None and not r.is_error for r in others)

    winners = [(i, body(r)) for i, r in edits if r is not None and not r.is_error]
    assert len(winners) == 1, "compare-and-swap let more than one edit of one version through"
    winner_index, winner = winners[0]
    for _, r in edits:
        if r is not None and r.is_error:
            lost = error(r)
            assert lost["code"] == "version_conflict"
            assert lost["current_version"] == winner["updated_at"]

    assert article_events(data.db, data.password) == [*events_before, "Saved"]
    async with http_client(server.url) as client:
        final = await read(client, data, data.password)
    assert final["content"] == f"Version written by call {winner_index}."
    assert final["updated_at"] == winner["updated_at"]


async def test_read_modify_write_loops_lose_no_update(data: Seed, server: HttpServer) -> None:
    """Each client appends its own lines with read, edit, and on version_conflict read again
    and re-apply: every line must survive, one event per successful edit."""
    steps = 4
    events_before = article_events(data.db, data.billing)

    async def append_lines(client: Client, n: int) -> int:
        conflicts = 0
        for step in range(steps):
            line = f"line {n}.{step}"
            while True:
                article = await read(client, data, data.billing)
                result = await client.call_tool(
                    "edit_knowledge_article",
                    {
                        "knowledge_base_id": data.kb,
                        "article_id": data.billing,
                        "content": f"{article['content']}\n{line}",
                        "expected_version": article["updated_at"],
                        "idempotency_key": line,
                    },
                )
                if not result.is_error:
                    break
                assert error(result)["code"] == "version_conflict"
                conflicts += 1
        return conflicts

    async with AsyncExitStack() as stack:
        clients = await open_clients(stack, server.url)
        async with anyio.create_task_group() as group:
            for n, client in enumerate(clients):
                group.start_soon(append_lines, client, n)
        final = await read(clients[0], data, data.billing)

    lines = final["content"].splitlines()[1:]
    expected = {f"line {n}.{step}" for n in range(CLIENTS) for step in range(steps)}
    assert sorted(lines) == sorted(expected), "an update was lost"
    assert article_events(data.db, data.billing) == events_before + ["Saved"] * len(expected)
