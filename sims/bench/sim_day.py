"""Row 8: the real `kbes sim day` command, end to end."""

from __future__ import annotations

from kbes.sims.bench.commands import kbes_command, run_measured
from kbes.sims.bench.config import Progress
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.seeds import parse_seeds


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
