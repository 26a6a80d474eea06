"""Row 3: one page of the feed, in a small log, a large one, and one shared by ten
knowledge bases."""

from __future__ import annotations

import random
from pathlib import Path

from kbes import open_store
from kbes.sims.baseline import Baseline
from kbes.sims.bench.calls import baseline_poller, kbes_poller
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import baseline_log, build_log
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import latencies_in_turns, percentile


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
        head = store.head()
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
