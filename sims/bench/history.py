"""Row 4: an article with a long history, read and loaded for an edit."""

from __future__ import annotations

from pathlib import Path

from kbes import Article, KnowledgeBaseStore, SystemClock, next_timestamp, open_store
from kbes.sims.baseline import Baseline
from kbes.sims.bench.calls import baseline_reader, kbes_reader
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import bulk_store
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import latencies_in_turns, latencies_ms, percentile


def measure_long_history(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 4: reading an article with 1 save and with 10,000; and loading it for an edit with
    an empty aggregate cache (a fresh process), which snapshots bound."""
    cfg = report.config
    progress(f"row 4: one article with 1 save, one with {cfg.long_history:,}")
    path = workdir / "history.sqlite"
    clock = SystemClock()
    loader = bulk_store(path)
    kb = loader.create_knowledge_base("history")
    articles = {}
    for saves in (1, cfg.long_history):
        article = Article.draft(kb, f"{saves} saves", "text", at=next_timestamp(clock, None))
        article.publish(at=next_timestamp(clock, article.updated_at))
        loader.save(article)
        for i in range(saves):
            article.save(f"save {i}", at=next_timestamp(clock, article.updated_at))
            if i % 1000 == 999:
                loader.save(article)
        loader.save(article)
        articles[saves] = str(article.id)
    loader.catch_up()
    loader.close()
    baseline = Baseline(str(workdir / "history-baseline.sqlite"))
    bkb = baseline.create_knowledge_base()
    barticles = {}
    for saves in (1, cfg.long_history):
        [barticle] = baseline.add_articles(bkb, [(f"{saves} saves", "text")])
        version = baseline.read(bkb, barticle)["updated_at"]
        baseline.db.execute("PRAGMA synchronous=OFF")
        for i in range(saves):
            version = baseline.edit(bkb, barticle, f"save {i}", version, f"{saves}-{i}").updated_at
        baseline.db.execute("PRAGMA synchronous=FULL")
        barticles[saves] = barticle
    store = open_store(path)
    cold = KnowledgeBaseStore(
        {"SQLITE_DBNAME": str(path), "SQLITE_LOCK_TIMEOUT": "30", "AGGREGATE_CACHE_MAXSIZE": ""}
    )
    skb = str(kb)
    # Both articles measured in turns, call by call, so the machine's load touches both alike.
    histories = (1, cfg.long_history)
    ours: dict[int, list[float]] = {saves: [] for saves in histories}
    theirs: dict[int, list[float]] = {saves: [] for saves in histories}
    for _ in range(cfg.repeats):
        runs = latencies_in_turns(
            [(kbes_reader(store, skb), [articles[saves]] * cfg.samples) for saves in histories]
            + [
                (baseline_reader(baseline, bkb), [barticles[saves]] * cfg.samples)
                for saves in histories
            ]
        )
        for n, saves in enumerate(histories):
            ours[saves].append(percentile(runs[n], 50))
            theirs[saves].append(percentile(runs[n + len(histories)], 50))
    reads = {
        saves: report.add(
            Row(
                "4a" if saves == 1 else "4b",
                f"read_knowledge_article p50, article with {saves:,} save(s)",
                "ms",
                Stat.of(ours[saves]),
                Stat.of(theirs[saves]),
            )
        )
        for saves in histories
    }
    long_read, short_read = reads[cfg.long_history], reads[1]
    if long_read.kbes and short_read.kbes:
        growth = long_read.kbes.median / short_read.kbes.median
        long_read.target = "<= 1.5x row 4a"
        long_read.met = growth <= 1.5
        long_read.note = f"{growth:.2f}x row 4a"
    loads: dict[int, Row] = {}
    for saves in (1, cfg.long_history):
        picks = [articles[saves]] * min(cfg.samples // 4, 200)
        p50s = [percentile(latencies_ms(cold.get_article, picks), 50) for _ in range(cfg.repeats)]
        loads[saves] = report.add(
            Row(
                "4c" if saves == 1 else "4d",
                f"load for an edit with an empty aggregate cache (a fresh process), "
                f"{saves:,} save(s)",
                "ms",
                Stat.of(p50s),
                note="informational: snapshots bound it",
            )
        )
    long_load, short_load = loads[cfg.long_history].kbes, loads[1].kbes
    if long_load and short_load:
        growth = long_load.median / short_load.median
        loads[cfg.long_history].note = f"{growth:.2f}x row 4c; snapshots bound it"
    cold.close()
    store.close()
    baseline.close()
