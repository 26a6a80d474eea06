"""Row 2: read and search latency as the number of published articles grows, for the
queries an agent types (keyword-shaped) and the ones it asks (question-shaped,
`Corpus.question`): the question is the slow case of an OR query, so it is measured beside.
And catching one save up: another store saves an article with a word no article has, and the
timed search finds it by that word, as the next search of another process must."""

from __future__ import annotations

import random
import time
from pathlib import Path

from kbes import KnowledgeBaseStore, open_store
from kbes.sims.baseline import Baseline
from kbes.sims.bench.calls import (
    baseline_reader,
    baseline_searcher,
    kbes_reader,
    kbes_searcher,
)
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import latencies_ms, percentile


def measure_reads(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 2: read and search latency at growing numbers of published articles."""
    cfg = report.config
    corpus = Corpus()
    path = workdir / "reads.sqlite"
    loader = bulk_store(path)
    kb = str(loader.create_knowledge_base("reads"))
    baseline = Baseline(str(workdir / "reads-baseline.sqlite"))
    bkb = baseline.create_knowledge_base()
    ids: list[str] = []
    bids: list[str] = []
    titles: list[str] = []
    store: KnowledgeBaseStore | None = None
    for size in cfg.read_sizes:
        progress(f"row 2: {size:,} published articles (building)")
        while len(ids) < size:
            drafts = corpus.drafts(min(2000, size - len(ids)))
            ids += [str(a) for a in loader.add_articles(kb, drafts, publish=True)]
            bids += baseline.add_articles(bkb, drafts)
            titles += [title for title, _ in drafts]
        started = time.perf_counter()
        loader.catch_up()
        projection = time.perf_counter() - started
        if store is None:
            store = open_store(path)
        store.catch_up()
        started = time.perf_counter()
        store.search(kb, titles[0], 1)  # the keyword index follows the views at a search
        indexing = time.perf_counter() - started
        rng = random.Random(size)
        picks = [rng.randrange(size) for _ in range(cfg.samples)]
        queries = [corpus.query(titles[i]) for i in picks]
        # The same articles asked about, from a generator of their own (the corpus's sequence,
        # hence the next size's articles, stays as it was before questions were measured).
        asking = random.Random(f"question-{size}")
        questions = [corpus.question(titles[i], asking) for i in picks[: cfg.question_samples]]
        progress(f"row 2: {size:,} published articles (measuring)")
        results: dict[str, list[list[float]]] = {k: [] for k in ("r", "rb", "s", "sb", "q", "qb")}
        ours_ids = [ids[i] for i in picks]
        theirs_ids = [bids[i] for i in picks]
        # The largest searches are slow at the tail: three runs of them are enough.
        for _ in range(min(cfg.repeats, 3)):
            results["r"].append(latencies_ms(kbes_reader(store, kb), ours_ids))
            results["rb"].append(latencies_ms(baseline_reader(baseline, bkb), theirs_ids))
            results["s"].append(latencies_ms(kbes_searcher(store, kb), queries))
            results["sb"].append(latencies_ms(baseline_searcher(baseline, bkb), queries))
            results["q"].append(latencies_ms(kbes_searcher(store, kb), questions))
            results["qb"].append(latencies_ms(baseline_searcher(baseline, bkb), questions))
        for tool, ours, theirs in (
            ("read", "r", "rb"),
            ("search", "s", "sb"),
            ("question", "q", "qb"),
        ):
            for q in (50, 99):
                what = {
                    "read": "read_knowledge_article",
                    "search": "search_knowledge_base",
                    "question": "search_knowledge_base, question-shaped,",
                }[tool]
                row = Row(
                    f"2-{tool}-p{q}-{size}",
                    f"{what} p{q}, {size:,} published articles",
                    "ms",
                    Stat.of([percentile(run, q) for run in results[ours]]),
                    Stat.of([percentile(run, q) for run in results[theirs]]),
                )
                limit = {
                    ("read", 50, 10_000): 0.5,
                    ("search", 50, 10_000): 2.0,
                    ("search", 99, 100_000): 10.0,
                    ("question", 99, 100_000): 10.0,
                }.get((tool, q, size))
                if limit is not None:
                    row.target = f"<= {limit:g} ms"
                    row.met = row.kbes is not None and row.kbes.median <= limit
                report.add(row)
        measure_catch_up(report, store, path, kb, ids, baseline, bkb, bids, size)
        report.notes.append(
            f"row 2: projecting {size:,} articles into the views took {projection:.1f} s "
            f"(catch-up of the import, once); the keyword index followed at the first search, "
            f"in {indexing:.1f} s"
        )
    loader.close()
    if store is not None:
        store.close()
    baseline.close()


def measure_catch_up(
    report: Report,
    store: KnowledgeBaseStore,
    path: Path,
    kb: str,
    ids: list[str],
    baseline: Baseline,
    bkb: str,
    bids: list[str],
    size: int,
) -> None:
    """Row 2's catch-up of one save: the save is another store's (another process's, as far as
    the views and the keyword index can tell), the search is timed, and it must find the save."""
    cfg = report.config
    writer = open_store(path)
    rng = random.Random(f"catch-up-{size}")
    ours: list[list[float]] = []
    theirs: list[list[float]] = []
    serial = 0
    for _ in range(min(cfg.repeats, 3)):
        run: list[float] = []
        base: list[float] = []
        for _ in range(cfg.catch_up_samples):
            i = rng.randrange(size)
            serial += 1
            word = f"zqcatch{size}x{serial}"  # no article has it, at any size
            article = store.read_article(kb, ids[i])
            writer.save_article(kb, ids[i], content=f"{article.content} {word}")
            started = time.perf_counter()
            hits = store.search(kb, word, 10)
            run.append((time.perf_counter() - started) * 1000)
            if [h.article_id for h in hits] != [ids[i]]:
                raise AssertionError(f"row 2: the search after a save did not find {ids[i]}")
            current = baseline.read(bkb, bids[i])
            baseline.edit(bkb, bids[i], f"{current['content']} {word}", current["updated_at"], word)
            started = time.perf_counter()
            found = baseline.search(bkb, word, 10)
            base.append((time.perf_counter() - started) * 1000)
            if [h["article_id"] for h in found] != [bids[i]]:
                raise AssertionError(f"row 2: the baseline did not find {bids[i]}")
        ours.append(run)
        theirs.append(base)
    writer.close()
    row = Row(
        f"2-catch-up-p50-{size}",
        f"search after another process's save, found by its new word, p50, {size:,} articles",
        "ms",
        Stat.of([percentile(run, 50) for run in ours]),
        Stat.of([percentile(run, 50) for run in theirs]),
    )
    if size == 100_000:
        row.target = "<= 15 ms"
        row.met = row.kbes is not None and row.kbes.median <= 15.0
    report.add(row)
