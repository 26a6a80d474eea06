"""The capabilities kbes declares, with the official client against real `kbes serve` processes:
the same on the 2025 handshake (`initialize`) and on 2026-07-28 (`server/discover`), over stdio
and HTTP, and no more than what kbes sends. No `listChanged` is declared, and none is sent,
even when a person creates a knowledge base under `--grant-all` (which changes
`resources/list`); a listen stream is acknowledged only for the resources it names."""

from __future__ import annotations

import functools
import subprocess
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated
from mcp_harness import KBES, Seed, http_client, http_server, seed, stdio_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbes.server.resources import knowledge_base_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIST_CHANGED = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


@asynccontextmanager
async def clients(
    transport: str, data: Seed, **options: dict[str, Any]
) -> AsyncIterator[dict[str, Client]]:
    """One client per protocol era (`options`: mode -> client options) of `kbes serve
    --grant-all` (so a new knowledge base changes resources/list); over HTTP, of one server."""
    async with AsyncExitStack() as stack:
        if transport == "stdio":
            connect = functools.partial(stdio_client, data.db, "--grant-all")
        else:
            server = stack.enter_context(http_server(data.db, "--grant-all"))
            connect = functools.partial(http_client, server.url)
        yield {
            mode: await stack.enter_async_context(connect(mode=mode, **extra))
            for mode, extra in options.items()
        }


def declared(client: Client) -> dict[str, Any]:
    assert client.server_capabilities is not None
    return client.server_capabilities.model_dump(by_alias=True, exclude_none=True)


def run(*args: str) -> None:
    """A person's command in a process of its own."""
    done = subprocess.run([KBES, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def new_knowledge_base_and_a_save(data: Seed) -> None:
    """What changes resources/list (a knowledge base created), then what rings (a save in `kb`)."""
    db = str(data.db)
    run("kb", "create", "Onboarding", "--db", db)
    run("article", "save", data.password, "--kb", data.kb, "--content", "From Account.", "--db", db)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_both_eras_declare_the_same_and_it_is_what_is_sent(
    data: Seed, transport: str
) -> None:
    """The handshake and discover declare the same capabilities, no listChanged among them. A
    new knowledge base then changes resources/list, and kbes says nothing of it, as it said it
    would not: a listener is acknowledged only for the resource it names, and a handshake
    client hears no list_changed. The resource ring after the change is the point by which a
    notification would be in."""
    uri = knowledge_base_uri(data.kb)
    messages: list[Any] = []

    async def record(message: Any) -> None:
        messages.append(message)

    async with clients(transport, data, legacy={"message_handler": record}, auto={}) as client:
        assert client["legacy"].protocol_version not in MODERN_PROTOCOL_VERSIONS
        assert client["auto"].protocol_version in MODERN_PROTOCOL_VERSIONS
        handshake, discover = declared(client["legacy"]), declared(client["auto"])
        assert handshake == discover
        assert discover["tools"] == {"listChanged": False}
        assert discover["resources"] == {"subscribe": True, "listChanged": False}
        assert discover["prompts"] == {"listChanged": False}
        assert discover["completions"] == {}

        before = len((await client["auto"].list_resources()).resources)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client["legacy"].subscribe_resource(uri)
        async with client["auto"].listen(
            tools_list_changed=True,
            prompts_list_changed=True,
            resources_list_changed=True,
            resource_subscriptions=[uri],
        ) as stream:
            honored = stream.honored.model_dump(by_alias=True, exclude_none=True)
            assert honored == {"resourceSubscriptions": [uri]}
            await anyio.to_thread.run_sync(new_knowledge_base_and_a_save, data)
            with anyio.fail_after(10):
                event = await stream.__anext__()
                while not any(isinstance(m, types.ResourceUpdatedNotification) for m in messages):
                    await anyio.sleep(0.01)
        listed = {mode: len((await c.list_resources()).resources) for mode, c in client.items()}
    assert event == ResourceUpdated(uri=uri)
    assert [m for m in messages if isinstance(m, LIST_CHANGED)] == []
    assert listed == {"legacy": before + 1, "auto": before + 1}
