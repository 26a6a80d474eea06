"""`kbes serve --search hybrid` with the official MCP client, over stdio and streamable HTTP,
with no network: over stdio the server runs in a network namespace of its own (only a down
loopback), over HTTP with every proxy variable pointing at a closed port and the model hubs'
offline switches set, so a download at run time would fail the test."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_harness import KBES, body, http_client, http_server

from kbes import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    **{v: "http://127.0.0.1:9" for v in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
    "NO_PROXY": "",
    "no_proxy": "",
}


def seeded(db: Path) -> tuple[str, str, str]:
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Home"))
        cat = store.add_article(
            kb, "Feline care", "Feed a cat twice a day and brush its fur.", publish=True
        )
        store.add_article(kb, "Car maintenance", "Change the engine oil every year.", publish=True)
        gone = store.add_article(kb, "Kitten diet", "What a young cat eats.", publish=True)
        store.unpublish_article(kb, gone)
    finally:
        store.close()
    return kb, str(cat), str(gone)


def isolated() -> bool:
    unshare = shutil.which("unshare")
    return unshare is not None and subprocess.run([unshare, "-rn", "true"]).returncode == 0


@asynccontextmanager
async def connect(transport: str, db: Path, kb: str) -> AsyncIterator[Client]:
    serve = ["--grant", kb, "--search", "hybrid"]
    env = {**os.environ, **OFFLINE}
    if transport == "stdio":
        if not isolated():
            pytest.skip("unshare -rn is not permitted here: no network namespace to run in")
        command = shutil.which("unshare")
        assert command
        params = StdioServerParameters(
            command=command, args=["-rn", KBES, "serve", "--db", str(db), *serve], env=env
        )
        async with Client(params) as client:
            yield client
        return
    saved = dict(os.environ)
    os.environ.update(OFFLINE)  # the server inherits them; the client is told no proxy
    try:
        with http_server(db, *serve) as server:
            os.environ.clear()
            os.environ.update(saved)
            async with http_client(server.url) as client:
                yield client
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_hybrid_over_mcp_without_network(transport: str, tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    kb, cat, gone = seeded(db)
    async with connect(transport, db, kb) as client:

        async def search(query: str) -> list[str]:
            result = await client.call_tool(
                "search_knowledge_base", {"knowledge_base_id": kb, "query": query}
            )
            assert not result.is_error, result
            found: dict[str, Any] = body(result)
            return [hit["article_id"] for hit in found["hits"]]

        # No word in common with the article: only meaning finds it, first.
        assert (await search("looking after my kitten"))[0] == cat
        assert gone not in await search("what do young cats eat")
        # A save from another process is found by meaning at the next search.
        writer = open_store(db)
        try:
            car = writer.search(kb, "engine oil", 1)[0].article_id
            writer.save_article(
                kb, car, title="Puppy training", content="Teach a young dog to sit."
            )
        finally:
            writer.close()
        assert (await search("teaching my dog tricks"))[0] == car
