"""A small `kbes sim cost` run, shared by the tests that each check one strategy's row: they
must run the same world the same way, or their figures would not be comparable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kbes.cli import main

SMALL = ["--seeds", "1-2", "--articles", "60", "--questions", "24", "--saves", "80", "--hours", "4"]


def run_small_cost(tmp_path: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The printed table, the JSON's strategies and the trace's records of a small run."""
    out = tmp_path / "cost.json"
    trace = tmp_path / "trace.jsonl"
    result = CliRunner().invoke(
        main,
        ["sim", "cost", *SMALL, "--jobs", "1", "--json", str(out), "--trace", str(trace)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    strategies = json.loads(out.read_text())["cost"]["strategies"]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    return result.output, strategies, records
