"""Row 15: a save found by a server without a disk commit on the search path. One knowledge
base of `freshness_articles` published articles, one `kbes serve` (stdio) that has searched it,
and this process as the other writer: it saves an article with a word no article has, and the
server is asked for that word 100 ms later, then again (nothing left to catch up), and, in a
second series, at once. The server's background catch-up (kbes.store.keeping_up) is what
should make the first search as cheap as the second; the search at once still finds the save
(read-after-write) and pays for what the background has not done yet. The CPU the background
spends per save is read from the server process while saves come and no search does."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from kbes import open_store
from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store, publish_generated
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.server_process import holdings, server_pid
from kbes.sims.bench.timing import percentile

TOOL = "search_knowledge_base"
DELAY = 0.1
"""Seconds between the save and the search that should find it caught up."""
RATIO_TARGET = 1.5
CPU_SAVES = 20
CPU_SPACING = 0.25
"""Seconds between two saves of the CPU window: each caught up before the next."""


def build(path: Path, articles: int, corpus: Corpus) -> tuple[str, list[str]]:
    """One knowledge base of `articles` published articles, projected; its id and article ids."""
    loader = bulk_store(path)
    try:
        kb = str(loader.create_knowledge_base("freshness"))
        publish_generated(loader, kb, articles, corpus)
        loader.catch_up()
        ids = [a.article_id for a in loader.articles(kb)]
    finally:
        loader.close()
    return kb, ids


def one_run(
    db: Path, kb: str, ids: list[str], samples: int, seed: int
) -> tuple[list[float], list[float], list[float], float]:
    """Milliseconds of the searches 100 ms after a save, of the same searches again, and of
    searches at once after a save; and the server's CPU milliseconds per save in the
    background. One new server process."""
    command, *args = kbes_command()
    server = StdioServerParameters(
        command=command, args=[*args, "serve", "--db", str(db), "--grant", kb], env=dict(os.environ)
    )
    writer = open_store(db)
    rng = random.Random(seed)
    serial = 0

    def save() -> tuple[str, str]:
        nonlocal serial
        serial += 1
        article = ids[rng.randrange(len(ids))]
        word = f"zqfresh{seed}x{serial}"  # no article has it
        # Written blind: a read here would fold the views in this process, the server's job.
        writer.save_article(kb, article, content=f"Revised by another process: {word}.")
        return article, word

    async def search(client: Client, word: str, article: str) -> float:
        start = time.perf_counter_ns()
        result = await client.call_tool(TOOL, {"knowledge_base_id": kb, "query": word})
        took = (time.perf_counter_ns() - start) / 1e6
        hits = (result.structured_content or {}).get("hits") or []
        if result.is_error or [h["article_id"] for h in hits] != [article]:
            raise RuntimeError(f"row 15: the search of {word!r} did not find {article}")
        return took

    async def measure() -> tuple[list[float], list[float], list[float], float]:
        later: list[float] = []
        again: list[float] = []
        at_once: list[float] = []
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(server, errlog=quiet)) as client:
                pid = server_pid()
                for _ in range(3):  # the first searches build the index and warm the caches
                    article, word = save()
                    await search(client, word, article)
                for _ in range(samples):
                    article, word = save()
                    await anyio.sleep(DELAY)
                    later.append(await search(client, word, article))
                    again.append(await search(client, word, article))
                for _ in range(samples):
                    article, word = save()
                    at_once.append(await search(client, word, article))
                await anyio.sleep(CPU_SPACING)
                idle_from = holdings(pid).cpu_seconds
                await anyio.sleep(CPU_SPACING * CPU_SAVES)
                idle = holdings(pid).cpu_seconds - idle_from
                busy_from = holdings(pid).cpu_seconds
                for _ in range(CPU_SAVES):
                    save()
                    await anyio.sleep(CPU_SPACING)
                busy = holdings(pid).cpu_seconds - busy_from
        return later, again, at_once, max(busy - idle, 0.0) / CPU_SAVES * 1000

    try:
        return anyio.run(measure)
    finally:
        writer.close()


def measure_freshness(report: Report, workdir: Path, progress: Progress) -> None:
    """Rows 15: search p50 100 ms after another process's save against the same search
    caught up, the search at once after a save, and the background's CPU per save."""
    cfg = report.config
    size = cfg.freshness_articles
    progress(f"row 15: {size:,} published articles (building)")
    db = workdir / "freshness.sqlite"
    kb, ids = build(db, size, Corpus(seed=15))
    later: list[float] = []
    again: list[float] = []
    at_once: list[float] = []
    cpu: list[float] = []
    for n in range(cfg.freshness_repeats):
        progress(f"row 15: saves and searches over MCP (run {n + 1} of {cfg.freshness_repeats})")
        a, b, c, d = one_run(db, kb, ids, cfg.freshness_samples, n)
        later.append(percentile(a, 50))
        again.append(percentile(b, 50))
        at_once.append(percentile(c, 50))
        cpu.append(d)
    row = Row(
        "15-after-save-p50",
        f"search {DELAY * 1000:g} ms after another process's save, found by its new word, p50, "
        f"{size:,} articles (baseline column: the same search caught up)",
        "ms",
        Stat.of(later),
        Stat.of(again),
    )
    row.target = f"<= {RATIO_TARGET:g}x caught up"
    row.met = row.ratio is not None and row.ratio <= RATIO_TARGET
    report.add(row)
    report.add(
        Row(
            "15-at-once-p50",
            f"search at once after another process's save, found by its new word, p50, "
            f"{size:,} articles (baseline column: the same search caught up)",
            "ms",
            Stat.of(at_once),
            Stat.of(again),
        )
    )
    report.add(
        Row(
            "15-background-cpu",
            f"server's CPU per save in its background catch-up, {size:,} articles",
            "ms",
            Stat.of(cpu),
        )
    )


__all__ = ["measure_freshness"]
