"""`kbes bench`: every hot path measured, side by side with a plain-sqlite3 baseline.

Each measurement runs several times and reports the median, min and max of the runs, with the
baseline (`kbes.sims.baseline`, the same operation written directly on sqlite3) where one
applies, and the ratio kbes / baseline. Everything runs on throwaway SQLite files in WAL mode;
kbes is measured at its default durability (`synchronous=FULL`, the baseline's too) unless a
row says otherwise. Large datasets are built once per run through the product's own save path
in big batches (bulk loads use `synchronous=OFF`: they are throwaway), then measured at the
default durability.

(`kbes.sims.bench` is `kbes sim --benchmark`'s summary; this module is `kbes bench`.)
"""

from __future__ import annotations

import gc
import itertools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from kbes import (
    Article,
    KnowledgeBaseStore,
    SystemClock,
    call_tool,
    next_timestamp,
    open_store,
)
from kbes.sims.baseline import Baseline

Progress = Callable[[str], None]


# Configuration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions: the full run measures the issue's datasets; `--quick` the same
    rows on small ones (under a minute), so the command and its output stay exercised."""

    quick: bool
    repeats: int
    edits: int
    edits_per_process: int
    processes: int
    read_sizes: tuple[int, ...]
    samples: int
    poll_small: int
    poll_large: int
    long_history: int
    process_repeats: int
    rebuild_repeats: int
    serve_repeats: int
    sim_repeats: int
    sim_seeds: str

    @classmethod
    def full(cls) -> Config:
        return cls(
            quick=False,
            repeats=5,
            edits=2000,
            edits_per_process=400,
            processes=4,
            read_sizes=(400, 10_000, 100_000),
            samples=1000,
            poll_small=1_000,
            poll_large=1_000_000,
            long_history=10_000,
            process_repeats=5,
            rebuild_repeats=3,
            serve_repeats=5,
            sim_repeats=3,
            sim_seeds="1-5",
        )

    @classmethod
    def quick_run(cls) -> Config:
        return cls(
            quick=True,
            repeats=3,
            edits=200,
            edits_per_process=25,
            processes=4,
            read_sizes=(400, 2_000),
            samples=200,
            poll_small=1_000,
            poll_large=20_000,
            long_history=1_000,
            process_repeats=1,
            rebuild_repeats=1,
            serve_repeats=3,
            sim_repeats=1,
            sim_seeds="1",
        )


# Results ----------------------------------------------------------------------------------


@dataclass
class Stat:
    """Median, min and max over the runs of one measurement."""

    median: float
    min: float
    max: float
    runs: list[float]

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        return cls(statistics.median(values), min(values), max(values), list(values))


@dataclass
class Row:
    """One printed line: a measurement of kbes, its baseline, their ratio and the target."""

    key: str
    measurement: str
    unit: str
    kbes: Stat | None
    baseline: Stat | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""
    higher_is_better: bool = False

    @property
    def ratio(self) -> float | None:
        """kbes / baseline, medians (for a rate, above 1 is kbes faster; for a time, below)."""
        if self.kbes is None or self.baseline is None or not self.baseline.median:
            return None
        return self.kbes.median / self.baseline.median

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


@dataclass
class Report:
    config: Config
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def find(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.key == key), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "quick": self.config.quick,
            "config": asdict(self.config),
            "machine": machine(),
            "rows": [r.to_json() for r in self.rows],
            "notes": self.notes,
        }


def machine() -> dict[str, Any]:
    import platform
    import sqlite3

    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }


# Timing helpers ---------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: p99 of 1,000 samples is the 990th smallest."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def latencies_ms(call: Callable[[Any], object], inputs: Sequence[Any]) -> list[float]:
    """Wall time of each call, in milliseconds, after a short warm-up."""
    for item in inputs[: min(20, len(inputs))]:
        call(item)
    gc.collect()
    clock = time.perf_counter_ns
    out: list[float] = []
    for item in inputs:
        start = clock()
        call(item)
        out.append((clock() - start) / 1e6)
    return out


def latencies_in_turns(
    calls: Sequence[tuple[Callable[[Any], object], Sequence[Any]]],
) -> list[list[float]]:
    """Like `latencies_ms` for several measurements at once, one call of each in turn, so a
    change in the machine's load lands on all of them alike (for rows compared by ratio)."""
    for call, inputs in calls:
        for item in inputs[: min(20, len(inputs))]:
            call(item)
    gc.collect()
    clock = time.perf_counter_ns
    out: list[list[float]] = [[] for _ in calls]
    for i in range(max(len(inputs) for _, inputs in calls)):
        for n, (call, inputs) in enumerate(calls):
            if i < len(inputs):
                start = clock()
                call(inputs[i])
                out[n].append((clock() - start) / 1e6)
    return out


def kbes_reader(store: KnowledgeBaseStore, kb: str) -> Callable[[str], object]:
    """`read_knowledge_article` through the tool layer, as the MCP server calls it."""

    def read(article: str) -> object:
        return call_tool(
            store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
        )

    return read


def kbes_searcher(store: KnowledgeBaseStore, kb: str) -> Callable[[str], object]:
    def search(query: str) -> object:
        return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})

    return search


def kbes_poller(store: KnowledgeBaseStore, kb: str) -> Callable[[int], object]:
    def poll(after: int) -> object:
        return call_tool(
            store,
            "poll_resource_events",
            {
                "resource_type": "knowledge_base",
                "resource_id": kb,
                "after_sequence": after,
                "limit": 100,
            },
        )

    return poll


def baseline_reader(baseline: Baseline, kb: str) -> Callable[[str], object]:
    def read(article: str) -> object:
        return baseline.read(kb, article)

    return read


def baseline_searcher(baseline: Baseline, kb: str) -> Callable[[str], object]:
    def search(query: str) -> object:
        return baseline.search(kb, query)

    return search


def baseline_poller(baseline: Baseline, kb: str) -> Callable[[int], object]:
    def poll(after: int) -> object:
        return baseline.poll(kb, after, 100)

    return poll


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit in {"edits/s", "events/s"}:
        return f"{value:,.0f}"
    if unit == "MB":
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


# The dataset ------------------------------------------------------------------------------


class Corpus:
    """Deterministic article text: a Zipf-distributed vocabulary for the content, topic words
    for titles, and queries an agent would type (two title words, sometimes a common word)."""

    SYLLABLES = tuple(f"{consonant}{vowel}" for consonant in "bkplmnrstvdg" for vowel in "aeiou")

    def __init__(self, seed: int = 7, vocabulary: int = 20_000) -> None:
        self.random = random.Random(seed)
        words = [
            "".join(parts)
            for parts in itertools.islice(
                itertools.chain(
                    itertools.product(self.SYLLABLES, repeat=2),
                    itertools.product(self.SYLLABLES, repeat=3),
                ),
                vocabulary,
            )
        ]
        self.random.shuffle(words)
        self.words = words
        self.weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(vocabulary)))
        self.topic_words = words[200:]

    def content(self, n: int = 100) -> str:
        return " ".join(self.random.choices(self.words, cum_weights=self.weights, k=n))

    def title(self) -> str:
        return " ".join(self.random.sample(self.topic_words, self.random.randint(3, 6))).title()

    def drafts(self, n: int) -> list[tuple[str, str]]:
        return [(self.title(), self.content()) for _ in range(n)]

    def query(self, title: str) -> str:
        words = title.lower().split()
        picked = self.random.sample(words, 2)
        if self.random.random() < 0.3:
            picked.append(self.random.choice(self.words[:50]))
        return " ".join(picked)


# Building stores ----------------------------------------------------------------------------


def bulk_store(path: Path) -> KnowledgeBaseStore:
    """A store for loading a throwaway dataset: synchronous=OFF (a power cut could lose it,
    and that is fine here); measurements reopen it at the default durability."""
    return open_store(path, synchronous="OFF")


def build_log(
    path: Path,
    *,
    knowledge_bases: int,
    events: int,
    articles_per_kb: int,
    seed: int = 11,
    progress: Progress | None = None,
) -> list[str]:
    """A log of `events` events through the product's save path: articles drafted and
    published, then rounds of one short save each on randomly picked articles, so every
    knowledge base's events are interleaved with the others'. Returns the knowledge base ids."""
    rng = random.Random(seed)
    clock = SystemClock()
    store = bulk_store(path)
    try:
        kbs = [store.create_knowledge_base(f"kb {i}") for i in range(knowledge_bases)]
        written = knowledge_bases
        articles: list[Article] = []
        for kb in kbs:
            batch = []
            for i in range(articles_per_kb):
                at = next_timestamp(clock, None)
                article = Article.draft(kb, f"article {i}", f"first text {i}", at=at)
                article.publish(at=next_timestamp(clock, article.updated_at))
                batch.append(article)
            store.save(*batch)
            written += 2 * len(batch)
            articles.extend(batch)
        rng.shuffle(articles)
        round_size = min(len(articles), 2000)
        while written < events:
            n = min(round_size, events - written)
            picked = rng.sample(articles, n)
            for article in picked:
                article.save(
                    f"saved text {written} {rng.random():.6f}",
                    at=next_timestamp(clock, article.updated_at),
                )
            store.save(*picked)
            written += n
            if progress and written % 100_000 < n:
                progress(f"  {written:,} of {events:,} events")
        return [str(kb) for kb in kbs]
    finally:
        store.close()


def baseline_log(
    path: Path, *, knowledge_bases: int, events: int, articles_per_kb: int, seed: int = 11
) -> list[str]:
    """The same shape of feed in the baseline's events table, inserted in bulk."""
    rng = random.Random(seed)
    baseline = Baseline(path)
    kbs = [baseline.create_knowledge_base() for _ in range(knowledge_bases)]
    articles = [
        (kb, str(UUID(int=rng.getrandbits(128)))) for kb in kbs for _ in range(articles_per_kb)
    ]
    rows = [(kb, article, "published", "2026-11-30T09:00:00.000000Z") for kb, article in articles]
    while len(rows) < events:
        kb, article = rng.choice(articles)
        rows.append((kb, article, "saved", "2026-11-30T09:00:00.000001Z"))
    db = baseline.db
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO events (knowledge_base_id, article_id, type, updated_at) VALUES (?, ?, ?, ?)",
        rows[:events],
    )
    db.execute("COMMIT")
    baseline.close()
    return kbs


# The measurements -------------------------------------------------------------------------


def edit_loop_kbes(store: KnowledgeBaseStore, kb: str, article: str, n: int, tag: str) -> float:
    """`n` edits of one article through the tool layer, each with the version the previous
    one returned and a fresh idempotency key; returns edits per second."""
    version = _kbes_version(store, kb, article)
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        version = _kbes_edit(store, kb, article, tag, i, version)
    return n / (time.perf_counter() - start)


def _kbes_version(store: KnowledgeBaseStore, kb: str, article: str) -> str:
    return call_tool(  # type: ignore[attr-defined,no-any-return]
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
    ).updated_at


def _kbes_edit(
    store: KnowledgeBaseStore, kb: str, article: str, tag: str, i: int, version: str
) -> str:
    """Edit `i` of a loop through the tool layer; returns the new version."""
    return call_tool(  # type: ignore[attr-defined,no-any-return]
        store,
        "edit_knowledge_article",
        {
            "knowledge_base_id": kb,
            "article_id": article,
            "content": f"content {tag} {i}",
            "expected_version": version,
            "idempotency_key": f"{tag}-{i}",
        },
    ).updated_at


def edit_loop_baseline(baseline: Baseline, kb: str, article: str, n: int, tag: str) -> float:
    version = baseline.read(kb, article)["updated_at"]
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        version = baseline.edit(kb, article, f"content {tag} {i}", version, f"{tag}-{i}").updated_at
    return n / (time.perf_counter() - start)


def measure_edits(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 1: edits per second, one process; four processes on one file; opt-in NORMAL."""
    cfg = report.config
    for synchronous, key in (("FULL", "1a"), ("NORMAL", "1c")):
        progress(f"row {key}: edits, one process, synchronous={synchronous}")
        path = workdir / f"edits-{synchronous}.sqlite"
        store = open_store(path, synchronous=None if synchronous == "FULL" else synchronous)
        baseline = Baseline(str(workdir / f"edits-{synchronous}-baseline.sqlite"))
        baseline.db.execute(f"PRAGMA synchronous={synchronous}")
        kb = str(store.create_knowledge_base("edits"))
        bkb = baseline.create_knowledge_base()
        ours, theirs = [], []
        for run in range(cfg.repeats):
            article = str(store.add_article(kb, f"article {run}", "text", publish=True))
            [barticle] = baseline.add_articles(bkb, [(f"article {run}", "text")])
            ours.append(edit_loop_kbes(store, kb, article, cfg.edits, f"r{run}"))
            theirs.append(edit_loop_baseline(baseline, bkb, barticle, cfg.edits, f"r{run}"))
        store.close()
        baseline.close()
        if synchronous == "FULL":
            row = Row(
                "1a",
                f"edits/s, one process, {cfg.edits:,} edits of one article "
                "(CAS + receipt; WAL, synchronous=FULL)",
                "edits/s",
                Stat.of(ours),
                Stat.of(theirs),
                target=">= 0.7x baseline",
                higher_is_better=True,
            )
            row.met = row.ratio is not None and row.ratio >= 0.7
        else:
            row = Row(
                "1c",
                "edits/s, one process, opt-in synchronous=NORMAL (a power cut may lose the "
                "last acknowledged edits)",
                "edits/s",
                Stat.of(ours),
                Stat.of(theirs),
                note="informational: the opt-in faster setting",
                higher_is_better=True,
            )
        report.add(row)
    progress(f"row 1b: edits, {cfg.processes} processes on one file")
    ours, theirs = [], []
    for run in range(cfg.process_repeats):
        ours.append(multi_process_edits("kbes", workdir / "edits-mp.sqlite", cfg, run))
        theirs.append(multi_process_edits("baseline", workdir / "edits-mp-b.sqlite", cfg, run))
    report.add(
        Row(
            "1b",
            f"edits/s, {cfg.processes} processes on one file, {cfg.edits_per_process:,} edits "
            "each (WAL, synchronous=FULL)",
            "edits/s",
            Stat.of(ours),
            Stat.of(theirs),
            note="informational: no target",
            higher_is_better=True,
        )
    )


def _edit_worker(
    kind: str, path: str, kb: str, article: str, n: int, tag: str, ready: Any, go: Any, out: Any
) -> None:
    """One of the processes of row 1b: edits its own article, so the processes contend for
    the file's write lock, not for one article version."""
    if kind == "kbes":
        store = open_store(path)
        version = _kbes_version(store, kb, article)

        def edit(i: int, version: str) -> str:
            return _kbes_edit(store, kb, article, tag, i, version)

    else:
        baseline = Baseline(path)
        version = baseline.read(kb, article)["updated_at"]

        def edit(i: int, version: str) -> str:
            return baseline.edit(
                kb, article, f"content {tag} {i}", version, f"{tag}-{i}"
            ).updated_at

    ready.put(os.getpid())
    go.wait()
    start = time.perf_counter()
    for i in range(n):
        version = edit(i, version)
    out.put((start, time.perf_counter()))


def multi_process_edits(kind: str, path: Path, cfg: Config, run: int) -> float:
    """Total edits per second of `cfg.processes` processes editing one file at once, from the
    moment they are released together until the last finishes (start-up excluded)."""
    if kind == "kbes":
        store = open_store(path)
        kb = str(store.create_knowledge_base("mp")) if run == 0 else _first_kb(store)
        articles = [
            str(store.add_article(kb, f"p{p} r{run}", "text", publish=True))
            for p in range(cfg.processes)
        ]
        store.close()
    else:
        baseline = Baseline(str(path))
        kb = "mp"
        articles = baseline.add_articles(
            kb, [(f"p{p} r{run}", "text") for p in range(cfg.processes)]
        )
        baseline.close()
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(
            target=_edit_worker,
            args=(kind, str(path), kb, a, cfg.edits_per_process, f"r{run}p{p}", ready, go, out),
        )
        for p, a in enumerate(articles)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=120)
    go.set()
    spans = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return cfg.processes * cfg.edits_per_process / wall


def _first_kb(store: KnowledgeBaseStore) -> str:
    return str(store.views.knowledge_bases()[0]["knowledge_base_id"])


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
        rng = random.Random(size)
        picks = [rng.randrange(size) for _ in range(cfg.samples)]
        queries = [corpus.query(titles[i]) for i in picks]
        progress(f"row 2: {size:,} published articles (measuring)")
        results: dict[str, list[list[float]]] = {k: [] for k in ("r", "rb", "s", "sb")}
        ours_ids = [ids[i] for i in picks]
        theirs_ids = [bids[i] for i in picks]
        # Searches of 100,000 articles take tens of ms at the tail, so three runs suffice.
        for _ in range(min(cfg.repeats, 3)):
            results["r"].append(latencies_ms(kbes_reader(store, kb), ours_ids))
            results["rb"].append(latencies_ms(baseline_reader(baseline, bkb), theirs_ids))
            results["s"].append(latencies_ms(kbes_searcher(store, kb), queries))
            results["sb"].append(latencies_ms(baseline_searcher(baseline, bkb), queries))
        for tool, ours, theirs in (("read", "r", "rb"), ("search", "s", "sb")):
            for q in (50, 99):
                row = Row(
                    f"2-{tool}-p{q}-{size}",
                    f"{tool}_knowledge_{'article' if tool == 'read' else 'base'} p{q}, "
                    f"{size:,} published articles",
                    "ms",
                    Stat.of([percentile(run, q) for run in results[ours]]),
                    Stat.of([percentile(run, q) for run in results[theirs]]),
                )
                limit = {
                    ("read", 50, 10_000): 0.5,
                    ("search", 50, 10_000): 2.0,
                    ("search", 99, 100_000): 20.0,
                }.get((tool, q, size))
                if limit is not None:
                    row.target = f"<= {limit:g} ms"
                    row.met = row.kbes is not None and row.kbes.median <= limit
                report.add(row)
        report.notes.append(
            f"row 2: projecting {size:,} articles into the views took {projection:.1f} s "
            "(catch-up of the import, once)"
        )
    loader.close()
    if store is not None:
        store.close()
    baseline.close()


def measure_polls(
    report: Report, workdir: Path, progress: Progress, *, measure: bool = True
) -> Path | None:
    """Row 3: one page of 100 events at 1,000 and at 1,000,000 events, and with ten knowledge
    bases interleaved. The logs are built first, then measured in turns, call by call, so a
    change in the machine's load touches every row alike. Returns the large interleaved log,
    reused by rows 5 and 6."""
    cfg = report.config
    shapes = [
        ("3a", cfg.poll_small, 1, 50),
        ("3b", cfg.poll_large, 1, min(1000, cfg.poll_large // 20)),
        ("3c", cfg.poll_large, 10, min(1000, cfg.poll_large // 200)),
    ]
    if not measure:
        shapes = shapes[2:]
    setups = []
    for key, events, kbs, per_kb in shapes:
        progress(f"row {key}: building a log of {events:,} events, {kbs} knowledge base(s)")
        path = workdir / f"poll-{key}.sqlite"
        kb_ids = build_log(
            path, knowledge_bases=kbs, events=events, articles_per_kb=per_kb, progress=progress
        )
        if not measure:
            return path
        bpath = workdir / f"poll-{key}-baseline.sqlite"
        bkb_ids = baseline_log(bpath, knowledge_bases=kbs, events=events, articles_per_kb=per_kb)
        store = open_store(path)
        baseline = Baseline(str(bpath))
        head = store.recorder.max_notification_id() or 0
        rng = random.Random(events)
        # Cursors anywhere in the first 90% of the log: every page is a full page of 100.
        cursors = [rng.randrange(0, int(head * 0.9)) for _ in range(cfg.samples)]
        setups.append(
            (
                key,
                events,
                kbs,
                kbes_poller(store, kb_ids[0]),
                baseline_poller(baseline, bkb_ids[0]),
                cursors,
                store,
                baseline,
            )
        )
    ours: dict[str, list[float]] = {key: [] for key, *_ in setups}
    theirs: dict[str, list[float]] = {key: [] for key, *_ in setups}
    for run in range(cfg.repeats):
        progress(f"row 3: measuring, run {run + 1} of {cfg.repeats}")
        calls = [(poll, cursors) for _, _, _, poll, _, cursors, _, _ in setups]
        calls += [(bpoll, cursors) for _, _, _, _, bpoll, cursors, _, _ in setups]
        runs = latencies_in_turns(calls)
        for n, (key, *_) in enumerate(setups):
            ours[key].append(percentile(runs[n], 50))
            theirs[key].append(percentile(runs[n + len(setups)], 50))
    small: Row | None = None
    for key, events, kbs, _, _, _, store, baseline in setups:
        store.close()
        baseline.close()
        label = f"poll_resource_events p50, page of 100, {events:,} events in the log"
        if kbs > 1:
            label += f", {kbs} knowledge bases interleaved"
        row = report.add(Row(key, label, "ms", Stat.of(ours[key]), Stat.of(theirs[key])))
        if key == "3a":
            small = row
        elif small is not None and small.kbes is not None and row.kbes is not None:
            growth = row.kbes.median / small.kbes.median
            row.target = "<= 2 ms and <= 1.5x row 3a"
            row.met = row.kbes.median <= 2.0 and growth <= 1.5
            row.note = f"{growth:.2f}x row 3a"
    for key, *_ in setups:
        (workdir / f"poll-{key}-baseline.sqlite").unlink(missing_ok=True)
        if key != "3c":
            (workdir / f"poll-{key}.sqlite").unlink(missing_ok=True)
    return workdir / "poll-3c.sqlite"


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
        runs = [percentile(latencies_ms(cold.get_article, picks), 50) for _ in range(cfg.repeats)]
        loads[saves] = report.add(
            Row(
                "4c" if saves == 1 else "4d",
                f"load for an edit with an empty aggregate cache (a fresh process), "
                f"{saves:,} save(s)",
                "ms",
                Stat.of(runs),
                note="informational: snapshots bound it",
            )
        )
    if loads[1].kbes and loads[cfg.long_history].kbes:
        growth = loads[cfg.long_history].kbes.median / loads[1].kbes.median  # type: ignore[union-attr]
        loads[cfg.long_history].note = f"{growth:.2f}x row 4c; snapshots bound it"
    cold.close()
    store.close()
    baseline.close()


def measure_caught_up(
    report: Report, workdir: Path, large: Path | None, progress: Progress
) -> None:
    """Row 5: what a tool call pays to learn the views are already at the head of the log:
    one cheap query, the same at 1,000 events as at 1,000,000."""
    cfg = report.config
    progress("row 5: caught-up check")
    small = workdir / "caught-up-small.sqlite"
    build_log(small, knowledge_bases=1, events=cfg.poll_small, articles_per_kb=50)
    for key, path in (("5a", small), ("5b", large)):
        events = cfg.poll_small if key == "5a" else cfg.poll_large
        label = f"caught-up overhead per tool call, {events:,} events in the log"
        if path is None:
            report.add(Row(key, label, "ms", None, note="n/a (log not built)"))
            continue
        store = open_store(path)
        store.catch_up()
        runs = []
        for _ in range(cfg.repeats):
            n = 2_000 if cfg.quick else 20_000
            gc.collect()
            start = time.perf_counter()
            for _ in range(n):
                store.catch_up()
            runs.append((time.perf_counter() - start) / n * 1000)
        store.close()
        row = Row(key, label, "ms", Stat.of(runs), target="<= 0.1 ms")
        row.met = row.kbes is not None and row.kbes.median <= 0.1
        report.add(row)


def kbes_command() -> list[str]:
    """The installed `kbes` console script (the real command a user runs)."""
    script = Path(sys.executable).with_name("kbes")
    if script.exists():
        return [str(script)]
    found = shutil.which("kbes")
    if found:
        return [found]
    return [sys.executable, "-c", "from kbes.cli import main; main()"]


_MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - start
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)
"""


def run_measured(args: Sequence[str]) -> tuple[float, float, int]:
    """Run a command; return its wall time (s), its peak resident memory (MB) and exit code.

    It runs under a small Python process of its own: Linux's peak RSS of a child includes
    the RSS of whatever forked it (at exec the old address space's high-water mark is kept),
    so forked straight from the bench it would report the bench's own ~270 MB. The small
    parent adds ~10 MB to the figure."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2])


def measure_rebuild(report: Report, large: Path | None, progress: Progress) -> None:
    """Row 6: the real `kbes rebuild` command over the large log: events/s and peak memory."""
    cfg = report.config
    rate_label = f"kbes rebuild, {cfg.poll_large:,} events: events/s (whole command)"
    memory_label = f"kbes rebuild, {cfg.poll_large:,} events: peak memory (RSS)"
    if large is None:
        report.add(Row("6a", rate_label, "events/s", None, note="n/a (log not built)"))
        report.add(Row("6b", memory_label, "MB", None, note="n/a (log not built)"))
        return
    store = open_store(large)
    events = store.recorder.max_notification_id() or 0
    store.close()
    rates, peaks = [], []
    for run in range(cfg.rebuild_repeats):
        progress(f"row 6: kbes rebuild, run {run + 1} of {cfg.rebuild_repeats}")
        wall, peak, code = run_measured([*kbes_command(), "rebuild", "--db", str(large)])
        if code != 0:
            raise RuntimeError(f"kbes rebuild exited with {code}")
        rates.append(events / wall)
        peaks.append(peak)
    rate = report.add(
        Row(
            "6a",
            rate_label,
            "events/s",
            Stat.of(rates),
            target=">= 50,000 events/s",
            higher_is_better=True,
        )
    )
    rate.met = rate.kbes is not None and rate.kbes.median >= 50_000
    memory = report.add(Row("6b", memory_label, "MB", Stat.of(peaks), target="<= 300 MB"))
    memory.met = memory.kbes is not None and memory.kbes.max <= 300


def parse_seeds(text: str) -> list[int]:
    """`1-5` or `1,3`: the seeds `kbes sim` will run (to label the row)."""
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        seeds.extend(range(int(low), int(high or low) + 1))
    return seeds


def serve_to_tools_list(db: Path) -> float:
    """Seconds from starting `kbes serve` (stdio) to the answer of the first `tools/list`."""

    def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def answer(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]
        raise RuntimeError("kbes serve closed stdout before answering")

    start = time.perf_counter()
    proc = subprocess.Popen(
        [*kbes_command(), "serve", "--db", str(db), "--grant-all"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "kbes-bench", "version": "1"},
                },
            },
        )
        answer(proc, 1)
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answer(proc, 2)
        elapsed = time.perf_counter() - start
        tools = listed.get("result", {}).get("tools", [])
        if len(tools) < 4:
            raise RuntimeError(f"tools/list answered {listed!r}")
        return elapsed
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_serve(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 7: `kbes serve` start-up to the first `tools/list` answer over stdio."""
    cfg = report.config
    label = "kbes serve start-up to the first tools/list answer (stdio)"
    progress("row 7: kbes serve start-up")
    db = workdir / "serve.sqlite"
    store = open_store(db)
    kb = store.create_knowledge_base("serve")
    store.add_articles(kb, Corpus().drafts(400), publish=True)
    store.close()
    runs = [serve_to_tools_list(db) for _ in range(cfg.serve_repeats)]
    row = report.add(Row("7", label, "s", Stat.of(runs), target="<= 0.6 s"))
    row.met = row.kbes is not None and row.kbes.median <= 0.6


def measure_sim(report: Report, progress: Progress) -> None:
    """Row 8: the real `kbes sim day` command, five seeds (its default), end to end."""
    cfg = report.config
    seeds = len(parse_seeds(cfg.sim_seeds))
    label = (
        f"kbes sim day, {'five seeds' if seeds == 5 else f'{seeds} seed(s) (quick)'}, end to end"
    )
    runs = []
    for run in range(cfg.sim_repeats):
        progress(f"row 8: kbes sim day --seeds {cfg.sim_seeds}, run {run + 1} of {cfg.sim_repeats}")
        wall, _, code = run_measured([*kbes_command(), "sim", "day", "--seeds", cfg.sim_seeds])
        if code != 0:
            raise RuntimeError(f"kbes sim day exited with {code}")
        runs.append(wall)
    row = report.add(Row("8", label, "s", Stat.of(runs), target="<= 10 s (five seeds)"))
    if seeds == 5:
        row.met = row.kbes is not None and row.kbes.median <= 10


# Running and printing ---------------------------------------------------------------------

GROUPS = ("1", "2", "3", "4", "5", "6", "7", "8")


@contextmanager
def workspace(directory: str | os.PathLike[str] | None) -> Iterator[Path]:
    """A folder for the throwaway databases: the one given (kept), or a temporary one."""
    if directory is not None:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="kbes-bench-") as tmp:
        yield Path(tmp)


def run(
    config: Config,
    *,
    groups: Sequence[str] = GROUPS,
    directory: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> Report:
    """Run the measurements of `groups` (row numbers) and return the report."""
    say = progress or (lambda _: None)
    report = Report(config)
    with workspace(directory) as workdir:
        if "1" in groups:
            measure_edits(report, workdir, say)
        if "2" in groups:
            measure_reads(report, workdir, say)
        large = None
        if {"3", "5", "6"} & set(groups):
            large = measure_polls(report, workdir, say, measure="3" in groups)
        if "4" in groups:
            measure_long_history(report, workdir, say)
        if "5" in groups:
            measure_caught_up(report, workdir, large, say)
        if "6" in groups:
            measure_rebuild(report, large, say)
        if "7" in groups:
            measure_serve(report, workdir, say)
        if "8" in groups:
            measure_sim(report, say)
    if config.quick:  # small datasets: the targets are judged on the full run only
        for row in report.rows:
            row.met = None
    return report


def spread(stat: Stat, unit: str) -> str:
    return f"{fmt(stat.median, unit)} [{fmt(stat.min, unit)}-{fmt(stat.max, unit)}]"


def render(report: Report) -> str:
    """The table people read: medians with [min-max], the baseline, ratio, target, verdict."""
    cfg = report.config
    header = (
        f"kbes bench{' --quick' if cfg.quick else ''}: median of {cfg.repeats} runs "
        f"[min-max]; ratio = kbes / baseline (medians)"
    )
    table = [("row", "measurement", "unit", "kbes", "baseline", "ratio", "target", "verdict")]
    for r in report.rows:
        ours = "n/a" if r.kbes is None else spread(r.kbes, r.unit)
        theirs = "-" if r.baseline is None else fmt(r.baseline.median, r.unit)
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        verdict = "" if r.met is None else ("met" if r.met else "MISSED")
        if r.note:
            verdict = f"{verdict} ({r.note})" if verdict else r.note
        table.append((r.key, r.measurement, r.unit, ours, theirs, ratio, r.target, verdict))
    widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
    lines = [header, ""]
    for n, line in enumerate(table):
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if cfg.quick:
        lines += [
            "",
            "--quick: small datasets and few samples, so no verdicts: the targets are judged "
            "on the full run (kbes bench).",
        ]
    if report.notes:
        lines += ["", *report.notes]
    return "\n".join(lines)


def write_json(report: Report, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps(report.to_json(), indent=2) + "\n")
