"""`kbes serve --search hybrid` on a knowledge base imported without vectors, as a real
process: it embeds the backlog in a background thread from the moment it starts, saying so in
its log; while articles wait, a search answers as keyword search does (never below it); once
the log says every article has its vector, a search finds by meaning. `kbes embed` does the
same offline with a progress bar."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import body, http_client, http_server, run_kbes

from kbes import call_tool, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WORDS = [
    *("invoice", "ledger", "account", "balance", "transfer", "payroll", "audit", "budget"),
    *("server", "network", "router", "firewall", "packet", "latency", "cluster", "backup"),
    *("garden", "soil", "compost", "seed", "harvest", "pruning", "irrigation", "tomato"),
]
CAT = ("Feline care", "Feed a cat twice a day and brush its fur.")
DONE = "every published article has its vector"


def filler(n: int, seed: int = 5) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [
        (
            " ".join(rng.sample(WORDS, 2)).capitalize() + f" {i}",
            " ".join(rng.choice(WORDS) for _ in range(40)) + ".",
        )
        for i in range(n)
    ]


def imported(db: Path, n: int) -> tuple[str, str]:
    """A knowledge base of `n` filler articles and the cat's, loaded without vectors."""
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Home"))
        store.add_articles(kb, filler(n), publish=True)
        cat = str(store.add_article(kb, *CAT, publish=True))
    finally:
        store.close()
    return kb, cat


def keyword_answer(db: Path, kb: str, query: str) -> list[str]:
    store = open_store(db)
    try:
        found: Any = call_tool(
            store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query}
        )
        return [hit.article_id for hit in found.hits]
    finally:
        store.close()


async def test_serve_embeds_its_backlog_in_the_background(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    kb, cat = imported(db, 60)
    by_words = keyword_answer(db, kb, "network backup")
    assert by_words
    with http_server(db, "--grant", kb, "--search", "hybrid") as server:
        async with http_client(server.url) as client:

            async def search(query: str) -> list[str]:
                result = await client.call_tool(
                    "search_knowledge_base", {"knowledge_base_id": kb, "query": query}
                )
                assert not result.is_error, result
                return [hit["article_id"] for hit in body(result)["hits"]]

            first = await search("network backup")
            if DONE not in server.log():  # still embedding: the keyword answer, unchanged
                assert first == by_words
            deadline = time.monotonic() + 300
            while DONE not in server.log():
                assert server.process.poll() is None, server.log()
                assert time.monotonic() < deadline, server.log()
                await search("network backup")  # searches go on while it embeds
                await anyio.sleep(0.5)
            log = server.log()
            assert "embedding 61 articles for hybrid search in the background" in log
            assert "embedded 61 articles for hybrid search" in log
            assert (await search("looking after my kitten"))[0] == cat
            # Random letters: nothing by words, and nothing clears the floor by meaning.
            assert await search("qzvbrt xkcdjw plomfrq") == []
    # A second start finds nothing waiting and embeds nothing.
    with http_server(db, "--grant", kb, "--search", "hybrid") as server:
        async with http_client(server.url) as client:
            await client.call_tool(
                "search_knowledge_base", {"knowledge_base_id": kb, "query": "soil"}
            )
        assert "embedding" not in server.log()


def test_embed_command_embeds_the_backlog_with_a_progress_bar(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    kb, cat = imported(db, 10)
    done = run_kbes("embed", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "embedding articles" in done.stderr
    assert "11 articles embedded for hybrid search" in done.stderr
    again = run_kbes("embed", "--db", str(db))
    assert again.returncode == 0 and "nothing to embed" in again.stderr
    store = open_store(db, search="hybrid")
    try:
        assert store.pending_embeddings() == 0
        assert store.search(kb, "looking after my kitten", 5)[0].article_id == cat
    finally:
        store.close()
