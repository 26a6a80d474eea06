"""`kbes sim cost`'s fifth strategy, kbes's own: listen to the cited articles, then read only
what moved. Its reads are real tool calls; its notifications are counted beside them."""

from __future__ import annotations

from pathlib import Path

from sim_cost import run_small_cost


def test_listen_then_read_counts_its_reads_and_notifications(tmp_path: Path) -> None:
    output, strategies, records = run_small_cost(tmp_path)
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
