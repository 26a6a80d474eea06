"""What a `kbes bench` run found: one row per printed line, gathered in a report."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kbes.sims.bench.config import Config


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
