"""`kbes sim cost`'s fourth strategy: poll, then diff only what moved."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kbes.cli import main

SMALL = ["--seeds", "1-2", "--articles", "60", "--questions", "24", "--saves", "80", "--hours", "4"]


def test_sim_cost_shows_poll_then_diff_below_re_reading(tmp_path: Path) -> None:
    out = tmp_path / "cost.json"
    trace = tmp_path / "trace.jsonl"
    result = CliRunner().invoke(
        main,
        ["sim", "cost", *SMALL, "--jobs", "1", "--json", str(out), "--trace", str(trace)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "diff only what moved" in line)
    assert row.startswith("| Poll, then diff only what moved |")

    strategies = json.loads(out.read_text())["cost"]["strategies"]
    diff, read, poll = strategies["diff"], strategies["read"], strategies["poll"]
    assert diff["kib"] < read["kib"]
    assert diff["bytes"] < read["bytes"]

    # Its cost is the poll's pages plus one diff_knowledge_article call per moved citation, and
    # every one of those calls is in the trace.
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    diffs = [
        c
        for c in calls
        if c.get("kind") == "call" and c.get("purpose") == "check:diff" and c["run"] == "popularity"
    ]
    assert diffs and all(c["tool"] == "diff_knowledge_article" for c in diffs)
    assert all("result" in c and c["result"]["changed"] for c in diffs)
    assert diff["calls"] == poll["calls"] + len(diffs)
    assert diff["bytes"] == poll["bytes"] + sum(c["bytes"] for c in diffs)
