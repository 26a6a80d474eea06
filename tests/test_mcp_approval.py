"""Per-call approval of edits (`--edits ask|allow|deny`). With `ask`, the server puts every edit
to the user through MCP elicitation (a server-to-client request on 2025 connections, an
`InputRequiredResult` round trip on 2026-07-28 ones) and writes only on acceptance."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp_harness import (
    Elicitations,
    HttpServer,
    Seed,
    article_events,
    body,
    current_version,
    error,
    event_count,
    http_client,
    http_server,
    seed,
    stdio_client,
)

from kbes import open_store
from kbes.server.mcp_server import KbesMCP

pytestmark = pytest.mark.anyio

TRANSPORTS = [("stdio", "auto"), ("stdio", "legacy"), ("http", "auto"), ("http", "legacy")]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("approval") / "kbes.sqlite")


@pytest.fixture(scope="module")
def asking_server(data: Seed) -> Iterator[HttpServer]:
    with http_server(data.db, "--grant", data.kb, "--edits", "ask") as server:
        yield server


@asynccontextmanager
async def connect(
    transport: str, mode: str, data: Seed, server: HttpServer | None, **options: Any
) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with stdio_client(data.db, "--grant", data.kb, mode=mode, **options) as client:
            yield client
    else:
        assert server is not None
        async with http_client(server.url, mode=mode, **options) as client:
            yield client


async def current(client: Client, data: Seed, article: str) -> dict[str, Any]:
    result = await client.call_tool(
        "read_knowledge_article", {"knowledge_base_id": data.kb, "article_id": article}
    )
    return body(result)


def edit_arguments(data: Seed, article: str, version: str, key: str) -> dict[str, Any]:
    return {
        "knowledge_base_id": data.kb,
        "article_id": article,
        "content": f"Reviewed by a person ({key}).",
        "expected_version": version,
        "idempotency_key": key,
    }


@pytest.mark.slow
@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS)
async def test_edit_is_written_only_after_the_user_accepts(
    transport: str, mode: str, data: Seed, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue("asking_server") if transport == "http" else None
    user = Elicitations()
    async with connect(transport, mode, data, server, elicitation_callback=user) as client:
        # Reads, searches and polls never ask.
        article = await current(client, data, data.billing)
        await client.call_tool(
            "poll_resource_events", {"resource_type": "knowledge_base", "resource_id": data.kb}
        )
        assert user.messages == []
        before = event_count(data.db)
        events_before = article_events(data.db, data.billing)

        # Declined, then dismissed: nothing written, a clear error.
        for action in ("decline", "cancel"):
            user.action = action
            key = f"approval-{transport}-{mode}-{action}"
            refused = error(
                await client.call_tool(
                    "edit_knowledge_article",
                    edit_arguments(data, data.billing, article["updated_at"], key),
                )
            )
            assert refused["code"] == "edit_declined"
            assert refused["action"] == action
            assert "nothing was written" in refused["message"]
            assert event_count(data.db) == before
        assert len(user.messages) == 2
        asked = user.messages[0]
        assert "edit_knowledge_article" in asked and data.billing in asked
        assert "Reviewed by a person" in asked  # the user sees the new content

        # Accepted: written once, with the version the agent cited.
        user.action = "accept"
        key = f"approval-{transport}-{mode}-accept"
        edited = body(
            await client.call_tool(
                "edit_knowledge_article",
                edit_arguments(data, data.billing, article["updated_at"], key),
            )
        )
        assert edited["replay"] is False
        assert len(user.messages) == 3
        assert article_events(data.db, data.billing) == [*events_before, "Saved"]
        assert (await current(client, data, data.billing))["content"].endswith(f"({key}).")


@pytest.mark.slow
async def test_a_client_that_cannot_elicit_gets_approval_required(
    data: Seed, asking_server: HttpServer
) -> None:
    before = event_count(data.db)
    for mode in ("auto", "legacy"):
        async with http_client(asking_server.url, mode=mode) as client:  # no elicitation
            article = await current(client, data, data.password)
            refused = error(
                await client.call_tool(
                    "edit_knowledge_article",
                    edit_arguments(data, data.password, article["updated_at"], f"noask-{mode}"),
                )
            )
            assert refused["code"] == "approval_required"
            assert "--edits allow" in refused["message"]
            assert refused["setting"] == "--edits allow"
    assert event_count(data.db) == before


@pytest.mark.slow
async def test_edits_deny_refuses_and_edits_allow_does_not_ask(data: Seed) -> None:
    user = Elicitations()
    before = event_count(data.db)
    async with stdio_client(
        data.db, "--grant", data.kb, "--edits", "deny", elicitation_callback=user
    ) as client:
        article = await current(client, data, data.password)
        refused = error(
            await client.call_tool(
                "edit_knowledge_article",
                edit_arguments(data, data.password, article["updated_at"], "deny"),
            )
        )
        assert refused["code"] == "edits_disabled"
        assert "--edits deny" in refused["message"]
    assert event_count(data.db) == before
    async with stdio_client(
        data.db, "--grant", data.kb, "--edits", "allow", elicitation_callback=user
    ) as client:
        edited = body(
            await client.call_tool(
                "edit_knowledge_article",
                edit_arguments(data, data.password, article["updated_at"], "allow"),
            )
        )
        assert edited["replay"] is False
    assert user.messages == []


@pytest.mark.parametrize("grants", ["all", "kb only"])
async def test_an_edit_of_an_ungranted_or_padded_id_is_refused_without_asking(
    data: Seed, grants: str
) -> None:
    """The grant check runs once, before approval: an id the grants do not admit (another
    knowledge base, or one padded with spaces, which names no knowledge base) is `not_found`,
    and the user is never asked about a write that could not happen."""
    store = open_store(data.db)
    try:
        granted = None if grants == "all" else frozenset({data.kb})
        server = KbesMCP(store, grants=granted, edits="ask")
        asked = Elicitations("accept")
        version = current_version(data.db, data.kb, data.password)
        async with Client(server.server, elicitation_callback=asked) as client:
            refused = [f" {data.kb}", f"{data.kb} "]
            if granted is not None:
                refused.append(data.other_kb)
            for kb in refused:
                arguments = {**edit_arguments(data, data.password, version, "padded")}
                result = error(
                    await client.call_tool(
                        "edit_knowledge_article", {**arguments, "knowledge_base_id": kb}
                    )
                )
                assert result["code"] == "not_found"
                assert kb in result["message"]
            assert asked.messages == []
            assert current_version(data.db, data.kb, data.password) == version
    finally:
        store.close()
