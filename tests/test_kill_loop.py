"""A few trials of tests/kill_loop.py, so the loop stays runnable: on each backend, every kind
(`kbes serve`, `kbes import`, `kbes rebuild`) killed with SIGKILL once with keyword search and
once with hybrid, then restarted and checked: nothing acknowledged lost or doubled, nothing
half-written, every search after the restart exactly what the log says. The acceptance run is
the script's own, with at least 100 trials (its docstring gives the command)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kill_loop import KINDS, SEARCHES, run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_few_kills_of_each_kind_lose_nothing(backend: str, tmp_path: Path) -> None:
    if backend == "postgresql":
        pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
        from pg_server import EXTERNAL_URL_ENV, PgUnavailable, find_bindir

        try:
            find_bindir()
        except PgUnavailable as reason:
            if not os.environ.get(EXTERNAL_URL_ENV):
                pytest.skip(f"the PostgreSQL trials need a server they can start: {reason}")
    loop, (checked, lost, doubled, views_differ) = run(12, [backend], seed=35, work=tmp_path)
    assert loop.tally.problems == []
    counts = loop.tally.counts
    for kind in KINDS:
        for search in SEARCHES:
            row = (backend, kind, search)
            assert counts[(*row, "trials")] == 2
            assert counts[(*row, "acked")] > 0
            assert counts[(*row, "searches")] > 0
    assert (lost, doubled, views_differ) == (0, 0, 0)
    assert checked == sum(n for key, n in counts.items() if key[3] == "acked")
