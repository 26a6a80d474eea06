"""Row 14: many knowledge bases on one server. A database of `tenant_kbs` small knowledge bases
(two published articles each) and one `kbes serve` (stdio) that searches each of them once, as
agents of many teams would: the first search of each is timed from the client, and what the
server process holds (threads, memory maps, open files, resident memory, idle CPU) is read
after 100 knowledge bases and after all of them. A server whose holdings grow with the number
of knowledge bases it has searched stops at the kernel's limits (issue 31); the row's target
is the same holdings after all of them as after 100."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.server_process import Holdings, holdings, server_pid
from kbes.sims.bench.timing import percentile

TOOL = "search_knowledge_base"
FIRST_SEARCH_TARGET_MS = 10.0
GROWTH_ALLOWED = 1.05
"""Holdings after all the knowledge bases, at most this much of those after `EARLY`, or one
more: the server's event loop starts and ends worker threads as requests overlap, so its few
threads differ by one between two readings whatever it has searched."""
EARLY = 100
IDLE_SECONDS = 2.0


def build(path: Path, kbs: int, corpus: Corpus) -> list[tuple[str, str, str]]:
    """`kbs` knowledge bases of two published articles, projected: for each, its id, the id of
    the article to find and a query made of that article's title."""
    loader = bulk_store(path)
    wanted: list[tuple[str, str, str]] = []
    try:
        for n in range(kbs):
            kb = str(loader.create_knowledge_base(f"team {n}"))
            drafts = corpus.drafts(2)
            ids = loader.add_articles(kb, drafts, publish=True)
            wanted.append((kb, str(ids[0]), corpus.query(drafts[0][0])))
        loader.catch_up()
    finally:
        loader.close()
    return wanted


def idle_cpu(pid: int) -> float:
    """The server's CPU share of one core while no request comes, over `IDLE_SECONDS`."""
    before = holdings(pid).cpu_seconds
    time.sleep(IDLE_SECONDS)
    return (holdings(pid).cpu_seconds - before) / IDLE_SECONDS


def search_each(
    db: Path, wanted: list[tuple[str, str, str]]
) -> tuple[list[float], tuple[Holdings, float], tuple[Holdings, float]]:
    """Milliseconds of each knowledge base's first search, from one new `kbes serve`, and the
    server's holdings and idle CPU after `EARLY` knowledge bases and after all."""
    command, *args = kbes_command()
    server = StdioServerParameters(
        command=command, args=[*args, "serve", "--db", str(db), "--grant-all"], env=dict(os.environ)
    )

    async def measure() -> tuple[list[float], tuple[Holdings, float], tuple[Holdings, float]]:
        clock = time.perf_counter_ns
        times: list[float] = []
        early: tuple[Holdings, float] | None = None
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(server, errlog=quiet)) as client:
                pid = server_pid()
                for n, (kb, article, query) in enumerate(wanted, 1):
                    start = clock()
                    result = await client.call_tool(TOOL, {"knowledge_base_id": kb, "query": query})
                    times.append((clock() - start) / 1e6)
                    hits = (result.structured_content or {}).get("hits") or []
                    if result.is_error or article not in {h["article_id"] for h in hits}:
                        raise RuntimeError(
                            f"row 14: the search of {query!r} in knowledge base {kb} did not "
                            f"find {article}: {result.content!r}"
                        )
                    if n == EARLY:
                        early = (holdings(pid), idle_cpu(pid))
                last = (holdings(pid), idle_cpu(pid))
        assert early is not None
        return times, early, last

    return anyio.run(measure)


def measure_tenants(report: Report, workdir: Path, progress: Progress) -> None:
    """Rows 14: first-search p50 and p99, and the server's holdings after all the knowledge
    bases against after the first 100, medians of runs."""
    cfg = report.config
    count = max(cfg.tenant_kbs, EARLY)
    progress(f"row 14: {count:,} knowledge bases of 2 articles (building)")
    db = workdir / "tenants.sqlite"
    wanted = build(db, count, Corpus(seed=14))
    firsts: dict[int, list[float]] = {50: [], 99: []}
    early_runs: list[tuple[Holdings, float]] = []
    last_runs: list[tuple[Holdings, float]] = []
    for n in range(cfg.tenant_repeats):
        progress(f"row 14: a search in each of {count:,} knowledge bases (run {n + 1})")
        order = list(wanted)
        random.Random(n).shuffle(order)
        times, early, last = search_each(db, order)
        for q in firsts:
            firsts[q].append(percentile(times, q))
        early_runs.append(early)
        last_runs.append(last)
    for q, values in firsts.items():
        row = Row(
            f"14-first-search-p{q}",
            f"first search of a small knowledge base over MCP (kbes serve, stdio), p{q}, "
            f"{count:,} knowledge bases",
            "ms",
            Stat.of(values),
        )
        if q == 50:
            row.target = f"<= {FIRST_SEARCH_TARGET_MS:g} ms"
            row.met = row.kbes is not None and row.kbes.median <= FIRST_SEARCH_TARGET_MS
        report.add(row)
    held: dict[str, tuple[str, Callable[[Holdings], float]]] = {
        "threads": ("threads", lambda h: float(h.threads)),
        "maps": ("memory maps", lambda h: float(h.maps)),
        "files": ("open files", lambda h: float(h.open_files)),
        "rss": ("resident memory", lambda h: h.rss_mb),
    }
    for key, (what, value) in held.items():
        row = Row(
            f"14-{key}",
            f"server's {what} after searching {count:,} knowledge bases "
            f"(baseline column: after {EARLY})",
            "MB" if key == "rss" else "count",
            Stat.of([value(h) for h, _ in last_runs]),
            Stat.of([value(h) for h, _ in early_runs]),
        )
        if key != "rss":  # stated, not a target: the process's caches fill as it works
            row.target = f"<= {GROWTH_ALLOWED:g}x or +1 after {EARLY}"
            after, before = row.kbes, row.baseline
            row.met = (
                after is not None
                and before is not None
                and after.median <= max(before.median * GROWTH_ALLOWED, before.median + 1)
            )
        report.add(row)
    report.add(
        Row(
            "14-idle-cpu",
            f"server's idle CPU after searching {count:,} knowledge bases "
            f"(baseline column: after {EARLY})",
            "% core",
            Stat.of([cpu * 100 for _, cpu in last_runs]),
            Stat.of([cpu * 100 for _, cpu in early_runs]),
        )
    )


__all__ = ["measure_tenants"]
