"""kbes.store.internals leans on eventsourcing's private names and copies two of its functions;
kbes.store.sqlite and kbes.store.postgres copy three more (`COPIED`). These tests fail when
eventsourcing changes under any of them, so an upgrade past the `<9.6` pin is caught here rather
than silently breaking a save, a snapshot, or the feed index. When one fails: read the library's
new code, re-measure the entry's bench row, then update the stored hash (or the entry) or drop
the entry."""

from __future__ import annotations

import hashlib
import inspect
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.application import Application, ProcessingEvent, project_aggregate
from eventsourcing.sqlite import (
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteDatastore,
)

from kbes.domain.article import Article
from kbes.domain.clock import SystemClock, next_timestamp
from kbes.store import internals


def source_hash(function: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


# What each copy or reach was written against (eventsourcing 9.5.6).
REPLACED = [
    (SQLiteConnectionPool._create_connection, "4635cb356e9ae4ec"),
    (SQLiteDatastore.__init__, "6f70a3c7d7e9d8ae"),
    (Application.save, "4e9747d14b8fd046"),
    (project_aggregate, "e2d05062a4fad31f"),
]


@pytest.mark.parametrize(
    ("function", "expected"), REPLACED, ids=[f.__qualname__ for f, _ in REPLACED]
)
def test_replaced_library_code_is_unchanged(function: Callable[..., Any], expected: str) -> None:
    assert source_hash(function) == expected, (
        f"eventsourcing's {function.__qualname__} changed: kbes.store.internals copies or "
        "relies on it; re-read it, re-measure, then update kbes.store.internals and this hash"
    )


# Copies outside kbes.store.internals, each of the library's public-class code it stands in for
# (eventsourcing 9.5.6): kbes.store.sqlite's `FeedApplicationRecorder.select_events` fast path and
# `KbesSQLiteFactory.__init__` (which rebuilds the datastore from the settings the library's
# factory read), kbes.store.postgres's `PostgresFeedRecorder.create_table`.
COPIED = [
    ("eventsourcing.sqlite", "SQLiteAggregateRecorder.select_events", "9f67704c004bbbd4"),
    ("eventsourcing.sqlite", "SQLiteFactory.__init__", "31a496bb9dab899a"),
    ("eventsourcing.postgres", "PostgresRecorder.create_table", "112d77b968e2da3c"),
    ("eventsourcing.postgres", "PostgresRecorder._create_table", "2a02b9fe6d23ddc9"),
]


@pytest.mark.parametrize(("module", "name", "expected"), COPIED, ids=[n for _, n, _ in COPIED])
def test_copied_library_code_is_unchanged(module: str, name: str, expected: str) -> None:
    library = pytest.importorskip(module, reason="psycopg not installed")
    owner, attribute = name.split(".")
    function = getattr(getattr(library, owner), attribute)
    assert source_hash(function) == expected, (
        f"eventsourcing's {name} changed: kbes.store.sqlite or kbes.store.postgres copies or "
        "rebuilds what it does; re-read it, bring the copy in line (or drop it), then update "
        "this hash"
    )


def test_the_select_events_fast_path_answers_as_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path (one prepared statement on a reader connection) gives the events the
    library's own query gives, after no version and after one."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteAggregateRecorder

    from kbes.store.sqlite import FeedApplicationRecorder, KbesSQLiteDatastore

    datastore = KbesSQLiteDatastore(str(tmp_path / "kbes.sqlite"))
    try:
        recorder = FeedApplicationRecorder(datastore)
        recorder.create_table()
        ids = [uuid4(), uuid4()]
        recorder.insert_events(
            [
                StoredEvent(originator_id=i, originator_version=v, topic=f"t{v}", state=b"s")
                for i in ids
                for v in (1, 2, 3)
            ]
        )
        for gt in (None, 0, 1, 3):
            with monkeypatch.context() as patch:  # the library's path reads in a transaction
                patch.setattr(datastore, "transaction", None)
                fast = recorder.select_events(ids[1], gt=gt)
            library = SQLiteAggregateRecorder.select_events(recorder, ids[1], gt=gt)
            assert fast == library, gt
        assert [e.originator_version for e in recorder.select_events(ids[1], gt=1)] == [2, 3]
    finally:
        datastore.close()


def test_postgres_hook_is_called_inside_the_insert_transaction() -> None:
    postgres = pytest.importorskip("eventsourcing.postgres", reason="psycopg not installed")
    recorder = postgres.PostgresApplicationRecorder
    assert source_hash(recorder.insert_events) == "f1a98da0239e3ea7"
    assert "self._fetch_ids_after_insert_events(" in inspect.getsource(recorder.insert_events)
    assert list(inspect.signature(recorder._fetch_ids_after_insert_events).parameters) == [
        "self",
        "curs",
        "stored_events",
        "_",
    ]


def test_private_names_exist_with_the_expected_shape(tmp_path: Path) -> None:
    pool = SQLiteConnectionPool(db_name=str(tmp_path / "x.sqlite"))
    try:
        connection = internals.new_connection(pool)
        assert isinstance(connection, SQLiteConnection)
        assert isinstance(connection.cursor().sqlite_cursor, sqlite3.Cursor)
        connection.close()
    finally:
        pool.close()
    datastore = SQLiteDatastore(str(tmp_path / "y.sqlite"))
    assert type(datastore.pool) is SQLiteConnectionPool  # the pool replace_pool swaps
    datastore.close()
    for name in ("_record", "_take_snapshots", "_notify", "notify"):
        assert callable(getattr(Application, name)), name
    assert {"events", "aggregates", "saved_kwargs"} <= set(vars(ProcessingEvent()))


def test_snapshot_state_holds_the_aggregate_timestamps() -> None:
    article = Article.draft(uuid4(), "t", "c", at=next_timestamp(SystemClock(), None))
    snapshot = Article.Snapshot.take(article)
    for name in internals.AGGREGATE_TIMESTAMPS:
        assert name in snapshot.state, name


def test_the_copies_behave_as_the_library() -> None:
    clock = SystemClock()
    article = Article.draft(uuid4(), "t", "c", at=next_timestamp(clock, None))
    article.publish(at=next_timestamp(clock, article.updated_at))
    events = article.collect_events()
    ours = internals.project_unchecked(None, events)
    theirs = project_aggregate(None, events)
    assert vars(ours) == vars(theirs)


PRIVATE_NAMES = (
    "_create_connection",
    "_sqlite_conn",
    "_fetch_ids_after_insert_events",
    "_created_on",
    "_modified_on",
    "_take_snapshots",
    "_notify",
)


def test_no_other_module_names_the_private_names() -> None:
    root = Path(internals.__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}: {name}"
        for folder in ("kbes", "projections", "cli", "sims")
        for path in sorted((root / folder).rglob("*.py"))
        if path.name != "internals.py"
        for name in PRIVATE_NAMES
        if re.search(rf"(?<!\w){name}(?!\w)", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_postgres_wait_follows_the_library_retry() -> None:
    """kbes.store.postgres.wait_per_try divides POSTGRES_CONNECT_TIMEOUT among eventsourcing's
    tries: the recorder's statements are still retried that many times, that far apart, and
    the pool still takes the settings the factory sets on it."""
    postgres = pytest.importorskip("eventsourcing.postgres", reason="psycopg not installed")
    from kbes.store.postgres import LIBRARY_RETRY_WAIT, LIBRARY_TRIES

    decorator = (
        "@retry((InterfaceError, OperationalError), "
        f"max_attempts={LIBRARY_TRIES}, wait={LIBRARY_RETRY_WAIT})"
    )
    recorder = postgres.PostgresApplicationRecorder
    for method in (recorder.insert_events, recorder.select_notifications, recorder.select_events):
        assert decorator in inspect.getsource(method), method.__qualname__
    pool = inspect.signature(postgres.ConnectionPool.__init__).parameters
    assert {"timeout", "reconnect_timeout", "kwargs"} <= set(pool)
