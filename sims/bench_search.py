"""Search rows for `kbes bench` (issue 12): each function measures one row through the public
API on throwaway stores and returns its figures; `kbes.sims.perf` turns them into rows.

    python -m kbes.sims.bench_search [--articles N] [--runs R]

prints every figure (the median of R runs where a row is timed)."""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.sims.perf import Corpus, latencies_in_turns, latencies_ms, percentile

BATCH = 2000


def load(path: Path, sizes: Sequence[int], corpus: Corpus) -> list[tuple[str, list[str]]]:
    """Knowledge bases of the given sizes of published articles, loaded through the save path
    (synchronous=OFF: throwaway); returns each one's id and titles."""
    store = open_store(path, synchronous="OFF")
    out = []
    try:
        for n, size in enumerate(sizes):
            kb = str(store.create_knowledge_base(f"kb {n}"))
            titles: list[str] = []
            while len(titles) < size:
                drafts = corpus.drafts(min(BATCH, size - len(titles)))
                store.add_articles(kb, drafts, publish=True)
                titles += [title for title, _ in drafts]
            out.append((kb, titles))
        store.catch_up()
    finally:
        store.close()
    return out


def searcher(store: KnowledgeBaseStore, kb: str) -> Any:
    def search(query: str) -> object:
        return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})

    return search


def isolation(workdir: Path, samples: int = 500, others: int = 100) -> dict[str, float]:
    """A knowledge base of 1,000 articles searched alone in its database, and the same one
    (same text, same queries) among `others` knowledge bases of 1,000: p50s and their ratio."""
    alone_path, shared_path = workdir / "alone.sqlite", workdir / "shared.sqlite"
    ((kb_alone, titles),) = load(alone_path, [1000], Corpus(seed=3))
    kb_shared = load(shared_path, [1000] + [1000] * others, Corpus(seed=3))[0][0]
    rng = random.Random(5)
    queries = [Corpus(seed=9).query(titles[rng.randrange(1000)]) for _ in range(samples)]
    alone, shared = open_store(alone_path), open_store(shared_path)
    try:
        a, s = latencies_in_turns(
            [(searcher(alone, kb_alone), queries), (searcher(shared, kb_shared), queries)]
        )
    finally:
        alone.close()
        shared.close()
    p50_alone, p50_shared = percentile(a, 50), percentile(s, 50)
    return {"alone_p50_ms": p50_alone, "shared_p50_ms": p50_shared, "ratio": p50_shared / p50_alone}


def large(workdir: Path, articles: int = 100_000, samples: int = 1000) -> dict[str, float]:
    """One knowledge base of `articles` published articles: search p50/p99, the catch-up of
    one save into the index (p50), the index's size on disk, and the peak memory of a process
    that opens the store, builds its index whole and searches."""
    path = workdir / "large.sqlite"
    corpus = Corpus(seed=7)
    ((kb, titles),) = load(path, [articles], corpus)
    peak = peak_memory(path, kb, [corpus.query(titles[i]) for i in range(20)])
    store = open_store(path)
    try:
        rng = random.Random(articles)
        queries = [corpus.query(titles[rng.randrange(articles)]) for _ in range(samples)]
        times = latencies_ms(searcher(store, kb), queries)
        out = {"p50_ms": percentile(times, 50), "p99_ms": percentile(times, 99)}
        out["catch_up_p50_ms"] = catch_up_of_one_save(store, kb)
        out["index_mb"] = index_bytes(store) / 1e6
        out["peak_rss_mb"] = peak
        return out
    finally:
        store.close()


def catch_up_of_one_save(store: KnowledgeBaseStore, kb: str, saves: int = 50) -> float:
    """p50 of bringing the index up to one new save (the views caught up first, untimed)."""
    ids = [row["article_id"] for row in store.views.articles(kb)[:saves]]
    times = []
    for n, article in enumerate(ids):
        store.save_article(kb, article, content=f"saved again {n} {time.time_ns()}")
        head = store.catch_up()
        started = time.perf_counter_ns()
        store.search_index.caught_up(head)
        times.append((time.perf_counter_ns() - started) / 1e6)
    return statistics.median(times)


def index_bytes(store: KnowledgeBaseStore) -> int:
    path = store.search_index.path
    return 0 if path is None else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def peak_memory(path: Path, kb: str, queries: Sequence[str]) -> float:
    """Peak RSS (MB) of a fresh process that opens the store and searches: its index is built
    whole first if missing, then searched."""
    done = subprocess.run(
        [sys.executable, "-m", "kbes.sims.bench_search", "--peak", str(path), kb, *queries],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def _peak(path: str, kb: str, queries: Sequence[str]) -> None:
    store = open_store(path)
    search = searcher(store, kb)
    for query in queries:
        search(query)
    store.close()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--peak"]:
        _peak(args[1], args[2], args[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parsed = parser.parse_args(args)
    runs: list[dict[str, float]] = []
    for run in range(parsed.runs):
        with tempfile.TemporaryDirectory(prefix="kbes-bench-search-") as tmp:
            figures = {
                **{
                    f"isolation_{k}": v
                    for k, v in isolation(Path(tmp), others=parsed.others).items()
                },
                **large(Path(tmp), parsed.articles),
            }
        print(f"run {run + 1}: {json.dumps(figures)}", flush=True)
        runs.append(figures)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("medians:", json.dumps({k: round(v, 3) for k, v in medians.items()}))


if __name__ == "__main__":
    main()
