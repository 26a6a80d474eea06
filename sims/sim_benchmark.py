"""`kbes sim --benchmark`: run a sim command several times and print the median wall time of each
part, against the 10-second target for `kbes sim day` with five seeds.

Parts are timed inside the runs (each run is one seed's day for one experiment), so with several
worker processes they overlap: their sum is busy time across the workers, while the last row,
end to end, is what a user waits for.

(`kbes bench`, the hot paths against a plain-sqlite3 baseline, is `kbes.sims.bench`.)"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

TARGET_SECONDS = 10.0

PHASES = {
    "generate": "phase: generate the day (text, popularity, saves)",
    "setup": "phase: copy the import, open the store",
    "saves": "phase: people's saves",
    "answers": "phase: answers (search, read two hits)",
    "check:truth": "phase: checks, ground truth",
    "check:title": "phase: checks, re-search each cited title",
    "check:read": "phase: checks, re-read each cited article",
    "check:poll": "phase: checks, poll from a cursor",
    "check:diff": "phase: checks, diff what moved",
    "check:listen": "phase: checks, read what listeners heard",
    "edits": "phase: edits (retries, replays)",
}


def summarize(timings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median, min and max over the repetitions, for each run kind, each phase, and the wall."""
    rows: list[dict[str, Any]] = []

    def add(name: str, values: list[float]) -> None:
        rows.append(
            {
                "part": name,
                "median": round(statistics.median(values), 3),
                "min": round(min(values), 3),
                "max": round(max(values), 3),
            }
        )

    run_names: list[str] = []
    for t in timings:
        for name in t["runs"]:
            if name not in run_names:
                run_names.append(name)
    for name in run_names:
        add(f"runs: {name}", [t["runs"].get(name, 0.0) for t in timings])
    for key, label in PHASES.items():
        values = [t["phases"].get(key, 0.0) for t in timings]
        if any(values):
            add(label, values)
    add("busy time, all runs", [sum(t["runs"].values()) for t in timings])
    add("CPU time, all runs", [t["cpu_seconds"] for t in timings])
    add("wall time, end to end", [t["wall_seconds"] for t in timings])
    return rows


def render(
    rows: Sequence[dict[str, Any]],
    *,
    command: str,
    repetitions: int,
    jobs: int,
    seeds: int,
    load: Sequence[float] = (),
    cores: int | None = None,
) -> str:
    lines = [
        f"## Benchmark: kbes sim {command}, {seeds} seed(s), median of {repetitions} "
        f"repetition(s), {jobs} worker process(es)",
        "",
        "| Part | median (s) | min (s) | max (s) |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['part']} | {r['median']:.3f} | {r['min']:.3f} | {r['max']:.3f} |" for r in rows
    ]
    wall = rows[-1]["median"]
    lines.append("")
    if command == "day" and seeds == 5:
        verdict = "met" if wall < TARGET_SECONDS else "NOT met"
        lines.append(
            f"Median wall time {wall:.2f} s against the {TARGET_SECONDS:.0f}-second target: "
            f"{verdict}."
        )
    else:
        lines.append(f"Median wall time {wall:.2f} s.")
    if load:
        lines.append(
            f"Load average (1 min) before each repetition: {', '.join(f'{x:.1f}' for x in load)}"
            f" on {cores or '?'} core(s): above 0 means other processes shared the cores; the "
            "CPU time is what the runs themselves cost."
        )
    lines.append(
        "Run and phase times are summed over the seeds; with several worker processes they "
        "overlap, so they add up to more than the wall time. The wall time is measured inside "
        "the command: starting Python and importing the CLI come on top (`time kbes sim day`)."
    )
    return "\n".join(lines) + "\n"
