"""`kbes rebuild` is invisible to a server answering reads (issue 13, defect 1): a real `kbes
serve`, driven by the SDK's client, reads published articles and searches in a loop while
`kbes rebuild` processes replay a 20,000-event log; not one read answers not_found and not one
search comes back empty."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp_harness import KBES, stdio_client

from kbes import open_store

ARTICLES = 10_000  # a draft and a publish each: 20,000 events
REBUILDS = 3


def build_log(db: Path) -> tuple[str, list[str]]:
    store = open_store(db, synchronous="OFF")
    try:
        kb = store.create_knowledge_base("Support")
        drafts = [(f"Article {i}", f"Connect to the vpn, then step {i}.") for i in range(ARTICLES)]
        ids = store.add_articles(kb, drafts, publish=True)
        assert (store.recorder.max_notification_id() or 0) >= 2 * ARTICLES
    finally:
        store.close()
    return str(kb), [str(article) for article in ids]


def test_reads_and_searches_never_fail_during_rebuilds(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    kb, ids = build_log(db)
    pick = random.Random(13)
    counts = {"reads": 0, "searches": 0, "rebuilds": 0}
    failures: list[Any] = []

    async def session() -> None:
        with anyio.fail_after(600):
            await drive()

    async def drive() -> None:
        async with stdio_client(db, "--grant-all") as client:

            async def read() -> None:
                article = pick.choice(ids)
                answer = await client.call_tool(
                    "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
                )
                counts["reads"] += 1
                if answer.is_error:
                    failures.append(("read", article, answer.content[0].text))

            async def search() -> None:
                answer = await client.call_tool(
                    "search_knowledge_base", {"knowledge_base_id": kb, "query": "vpn"}
                )
                counts["searches"] += 1
                if answer.is_error or not json.loads(answer.content[0].text)["hits"]:
                    failures.append(("search", answer.content[0].text[:200]))

            await read()  # the views caught up before the first rebuild
            for _ in range(REBUILDS):
                rebuild = subprocess.Popen(
                    [KBES, "rebuild", "--db", str(db)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                reads_before = counts["reads"]
                while rebuild.poll() is None:
                    await read()
                    await search()
                assert rebuild.returncode == 0
                assert rebuild.stdout is not None
                done = rebuild.stdout.read().strip()
                assert done == f"rebuilt views from {2 * ARTICLES + 1} events"
                assert counts["reads"] > reads_before  # the server answered during the rebuild
                counts["rebuilds"] += 1

    anyio.run(session)
    print(
        f"during {counts['rebuilds']} rebuilds of {2 * ARTICLES + 1} events: {counts['reads']} "
        f"reads, {counts['searches']} searches, {len(failures)} failures"
    )
    assert failures == [], failures[:5]
    assert counts["searches"] > 0
