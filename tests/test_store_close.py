"""Closing a store while another thread reads (issue 35, item 12): the read ends as it would
have, on its own connection, which is closed when the read ends; a read begun after the close
is refused. Before: the close closed the reader's connection under it (with eventsourcing's
concurrent recorder test cases, a segmentation fault)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import ConnectionPoolClosedError

from kbes.store.sqlite import KbesSQLiteDatastore


def test_a_read_in_flight_outlives_the_close_of_its_datastore(tmp_path: Path) -> None:
    datastore = KbesSQLiteDatastore(str(tmp_path / "k.sqlite"))
    with datastore.transaction(commit=True) as c:
        c.execute("CREATE TABLE t (n INTEGER)")
        c.execute("INSERT INTO t VALUES (1), (2), (3)")
    inside, closed = threading.Event(), threading.Event()
    found: list[Any] = []

    def read() -> None:
        try:
            with datastore.transaction(commit=False) as c:
                c.execute("SELECT n FROM t ORDER BY n")
                first = c.fetchone()[0]
                inside.set()
                assert closed.wait(30)
                c.execute("SELECT SUM(n) FROM t")
                found.append((first, c.fetchone()[0]))
        except BaseException as e:
            found.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    assert inside.wait(30)
    datastore.close()
    closed.set()
    reader.join(30)
    assert found == [(1, 6)]
    assert datastore._readers == []  # closed by the reader as its read ended
    with pytest.raises(ConnectionPoolClosedError), datastore.transaction(commit=False) as c:
        c.execute("SELECT 1")
