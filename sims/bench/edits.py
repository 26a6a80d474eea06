"""Row 1: edits per second through the tool layer, against the baseline's compare-and-swap."""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.sims.baseline import Baseline
from kbes.sims.bench.config import Config, Progress
from kbes.sims.bench.results import Report, Row, Stat

RATIO_TARGET = 0.7
"""Row 1a's target: kbes edits at least this fraction of the baseline's rate."""

Edit = Callable[[int, str], str]
"""Edit `i` of a loop, given the version the previous edit returned; returns the new one."""


def kbes_editor(store: KnowledgeBaseStore, kb: str, article: str, tag: str) -> tuple[Edit, str]:
    """Edits of one article through the tool layer, each with a fresh idempotency key; with
    the article's current version to start from."""

    def edit(i: int, version: str) -> str:
        return call_tool(
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

    version = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
    ).updated_at
    return edit, version


def baseline_editor(baseline: Baseline, kb: str, article: str, tag: str) -> tuple[Edit, str]:
    """The same edits on the baseline's compare-and-swap."""

    def edit(i: int, version: str) -> str:
        return baseline.edit(kb, article, f"content {tag} {i}", version, f"{tag}-{i}").updated_at

    return edit, baseline.read(kb, article)["updated_at"]


def edit_loop(editor: tuple[Edit, str], n: int) -> float:
    """`n` edits in a row, each with the version the previous one returned; edits per second."""
    edit, version = editor
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        version = edit(i, version)
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
            ours.append(edit_loop(kbes_editor(store, kb, article, f"r{run}"), cfg.edits))
            theirs.append(edit_loop(baseline_editor(baseline, bkb, barticle, f"r{run}"), cfg.edits))
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
                target=f">= {RATIO_TARGET:g}x baseline",
                higher_is_better=True,
            )
            row.met = row.ratio is not None and row.ratio >= RATIO_TARGET
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
        edit, version = kbes_editor(open_store(path), kb, article, tag)
    else:
        edit, version = baseline_editor(Baseline(path), kb, article, tag)
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
    return store.knowledge_bases()[0].knowledge_base_id
