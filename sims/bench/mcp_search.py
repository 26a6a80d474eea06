"""Row 13: `search_knowledge_base` as an agent calls it, over MCP: a real `kbes serve` (stdio)
and the official MCP client, on one knowledge base of 50,000 published articles, for the
queries row 2 measures in-process (keyword-shaped, and question-shaped by `Corpus.question`).

What the row adds to row 2 is the protocol's share: JSON-RPC framing, the pipe, the server's
event loop and the tool result's encoding, on top of whichever keyword engine the store's
search uses. Public API only (the store's bulk loader, the `kbes` command, the MCP client), so
the row measures the engine the product ships. Each run is a server process of its own."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store, publish_generated
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import percentile

P99_TARGET_MS = 25.0
TOOL = "search_knowledge_base"
WARM_UP = 20
"""Calls answered before the clock starts, as `latencies_ms` does in-process: the first
calls pay for the server's imports and the SQLite page cache."""


def build(path: Path, articles: int, corpus: Corpus) -> tuple[str, list[str]]:
    """One knowledge base of `articles` published articles, projected; its id and titles."""
    loader = bulk_store(path)
    try:
        kb = str(loader.create_knowledge_base("mcp search"))
        titles = publish_generated(loader, kb, articles, corpus)
        loader.catch_up()
    finally:
        loader.close()
    return kb, titles


def search_over_mcp(db: Path, kb: str, shapes: Sequence[Sequence[str]]) -> list[list[float]]:
    """Milliseconds of each `tools/call` of the search, one list per query set, from one
    `kbes serve` (stdio) process: the call's send to its answer, as the client sees it."""
    command, *args = kbes_command()
    server = StdioServerParameters(
        command=command, args=[*args, "serve", "--db", str(db), "--grant", kb], env=dict(os.environ)
    )

    async def call(client: Client, query: str) -> None:
        result = await client.call_tool(TOOL, {"knowledge_base_id": kb, "query": query})
        # Every query has words of an article's title: no hit means the search is broken,
        # and a broken search would be timed as a fast one.
        if result.is_error or not (result.structured_content or {}).get("hits"):
            raise RuntimeError(f"{TOOL} of {query!r} answered {result.content!r}")

    async def measure() -> list[list[float]]:
        clock = time.perf_counter_ns
        out: list[list[float]] = []
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(server, errlog=quiet)) as client:
                for queries in shapes:
                    for query in queries[:WARM_UP]:
                        await call(client, query)
                    times: list[float] = []
                    for query in queries:
                        start = clock()
                        await call(client, query)
                        times.append((clock() - start) / 1e6)
                    out.append(times)
        return out

    return anyio.run(measure)


def measure_mcp_search(report: Report, workdir: Path, progress: Progress) -> None:
    """Rows 13: keyword- and question-shaped search p50 and p99 over MCP, medians of runs."""
    cfg = report.config
    size = cfg.mcp_articles
    progress(f"row 13: {size:,} published articles (building)")
    corpus = Corpus(seed=13)
    db = workdir / "mcp-search.sqlite"
    kb, titles = build(db, size, corpus)
    rng = random.Random(13)
    picks = [rng.randrange(size) for _ in range(cfg.mcp_samples)]
    asking = random.Random("question-13")
    shapes = {
        "keyword": [corpus.query(titles[i]) for i in picks],
        "question": [corpus.question(titles[i], asking) for i in picks],
    }
    runs: dict[str, list[list[float]]] = {shape: [] for shape in shapes}
    for n in range(cfg.mcp_repeats):
        progress(f"row 13: {size:,} articles over MCP (run {n + 1} of {cfg.mcp_repeats})")
        for shape, times in zip(
            shapes, search_over_mcp(db, kb, list(shapes.values())), strict=True
        ):
            runs[shape].append(times)
    report.notes.append(
        "row 13: each call's time includes the official Python client's own work: it checks "
        "every result against the tool's output schema (jsonschema) before it returns it"
    )
    for shape in shapes:
        for q in (50, 99):
            stat = Stat.of([percentile(times, q) for times in runs[shape]])
            row = Row(
                f"13-{shape}-p{q}",
                f"search_knowledge_base over MCP (kbes serve, stdio), {shape}-shaped, p{q}, "
                f"{size:,} published articles",
                "ms",
                stat,
            )
            if q == 99:
                row.target = f"<= {P99_TARGET_MS:g} ms"
                row.met = stat.median <= P99_TARGET_MS
            report.add(row)
