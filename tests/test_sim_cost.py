"""`kbes sim cost`'s strategies of its own, beside the article's: poll, then diff only what
moved (the fourth), and listen to the cited articles, then read only what moved (the fifth,
kbes's own). Both are checked on one small run, recounted from its trace: their reads and
diffs are real tool calls, their notifications are counted beside them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kbes.cli import main

SMALL = ["--seeds", "1-2", "--articles", "60", "--questions", "24", "--saves", "80", "--hours", "4"]

SmallRun = tuple[str, dict[str, Any], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> SmallRun:
    """The printed table, the JSON's strategies and the trace's records of one small run."""
    folder = tmp_path_factory.mktemp("sim-cost")
    out, trace = folder / "cost.json", folder / "trace.jsonl"
    result = CliRunner().invoke(
        main,
        ["sim", "cost", *SMALL, "--jobs", "1", "--json", str(out), "--trace", str(trace)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    strategies = json.loads(out.read_text())["cost"]["strategies"]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    return result.output, strategies, records


def test_sim_cost_shows_poll_then_diff_below_re_reading(small_run: SmallRun) -> None:
    output, strategies, calls = small_run
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


def test_listen_then_read_counts_its_reads_and_notifications(small_run: SmallRun) -> None:
    output, strategies, records = small_run
    row = next(line for line in output.splitlines() if "read only what moved" in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    # The article never measured push: its columns say so, and carry no figure.
    assert cells[0] == "Listen to cited articles, read only what moved"
    assert cells[2] == "kbes only" and cells[4] == "—" and cells[6] == "—"

    listen, read = strategies["listen"], strategies["read"]
    reads = [
        r
        for r in records
        if r.get("kind") == "call" and r.get("purpose") == "check:listen"
        and r["run"] == "popularity"
    ]  # fmt: skip
    assert reads and all(r["tool"] == "read_knowledge_article" for r in reads)
    assert listen["calls"] == len(reads)
    assert listen["bytes"] == sum(r["bytes"] for r in reads)
    checks = [r for r in records if r.get("kind") == "check" and r["run"] == "popularity"]
    assert listen["notifications"] == sum(c["notifications"] for c in checks)
    # Each read answers at least one notification, and reads no more than re-reading does.
    assert len(reads) <= listen["notifications"]
    assert listen["calls"] < read["calls"] and listen["bytes"] < read["bytes"]
    assert cells[1] == f"{listen['calls']:,} reads + {listen['notifications']:,} notifications"
