"""The table people read, and the same figures as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kbes.sims.bench.results import Report, Stat


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
