"""Row 6: the real `kbes rebuild` command over the large log."""

from __future__ import annotations

from pathlib import Path

from kbes import open_store
from kbes.sims.bench.commands import kbes_command, run_measured
from kbes.sims.bench.config import Progress
from kbes.sims.bench.results import Report, Row, Stat


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
    events = store.head()
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
