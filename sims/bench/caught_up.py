"""Row 5: what a tool call pays to learn the views are already at the head of the log."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from kbes import open_store
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import build_log
from kbes.sims.bench.results import Report, Row, Stat


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
