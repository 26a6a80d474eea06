"""Running the groups of rows asked for, on throwaway databases."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kbes.sims.bench.caught_up import measure_caught_up
from kbes.sims.bench.config import Config, Progress
from kbes.sims.bench.edits import measure_edits
from kbes.sims.bench.freshness import measure_freshness
from kbes.sims.bench.history import measure_long_history
from kbes.sims.bench.hybrid_speed import measure_hybrid_speed
from kbes.sims.bench.isolation import measure_isolation
from kbes.sims.bench.mcp_search import measure_mcp_search
from kbes.sims.bench.polls import measure_polls
from kbes.sims.bench.push import measure_push
from kbes.sims.bench.quality import measure_quality
from kbes.sims.bench.reads import measure_reads
from kbes.sims.bench.rebuild import measure_rebuild
from kbes.sims.bench.results import Report
from kbes.sims.bench.sim_day import measure_sim
from kbes.sims.bench.startup import measure_serve
from kbes.sims.bench.tenants import measure_tenants

GROUPS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15")


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
    judged: str | os.PathLike[str] | None = None,
) -> Report:
    """Run the measurements of `groups` (row numbers) and return the report; `judged` is the
    folder of the judged collections row 11 reads (kbes.sims.bench.judged), if any."""
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
        if "9" in groups:
            measure_push(report, workdir, say)
        if "10" in groups:
            measure_isolation(report, workdir, say)
        if "11" in groups:
            measure_quality(report, workdir, say, Path(judged) if judged else None)
        if "12" in groups:
            measure_hybrid_speed(report, workdir, say)
        if "13" in groups:
            measure_mcp_search(report, workdir, say)
        if "14" in groups:
            measure_tenants(report, workdir, say)
        if "15" in groups:
            measure_freshness(report, workdir, say)
    if config.quick:  # small datasets: the targets are judged on the full run only
        for row in report.rows:
            row.met = None
    return report
