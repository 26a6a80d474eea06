"""`kbes sim cost`'s fourth strategy: poll, then diff only what moved."""

from __future__ import annotations

from pathlib import Path

from sim_cost import run_small_cost


def test_sim_cost_shows_poll_then_diff_below_re_reading(tmp_path: Path) -> None:
    output, strategies, calls = run_small_cost(tmp_path)
    row = next(line for line in output.splitlines() if "diff only what moved" in line)
    assert row.startswith("| Poll, then diff only what moved |")

    diff, read, poll = strategies["diff"], strategies["read"], strategies["poll"]
    assert diff["kib"] < read["kib"]
    assert diff["bytes"] < read["bytes"]

    # Its cost is the poll's pages plus one diff_knowledge_article call per moved citation, and
    # every one of those calls is in the trace.
    diffs = [
        c
        for c in calls
        if c.get("kind") == "call" and c.get("purpose") == "check:diff" and c["run"] == "popularity"
    ]
    assert diffs and all(c["tool"] == "diff_knowledge_article" for c in diffs)
    assert all("result" in c and c["result"]["changed"] for c in diffs)
    assert diff["calls"] == poll["calls"] + len(diffs)
    assert diff["bytes"] == poll["bytes"] + sum(c["bytes"] for c in diffs)
