"""The one module that touches eventsourcing's private names.

Everything else in kbes uses eventsourcing through its documented extension points: the
application's `_record` and the recorders' `_insert_events` (as the library's own
`searchabletimestamps` example does), `snapshotting_intervals`, `snapshotting_projectors`,
`construct_mapper`, and the factories' recorder classes.

What is here either copies a library function or reaches into a private name. Each entry names
what it replaces, why, and its gain as measured on a `kbes bench` row's loop with the entry
replaced by the library's own code (median of 7 alternating runs in fresh processes, CPU time
per operation, eventsourcing 9.5.6, Python 3.11; the absolute figures are the bench's).

tests/test_internals.py fails when eventsourcing changes under any of them (a replaced
function's source, a private name's presence or shape), so an upgrade past the `<9.6` pin is a
decision, not a silent break: re-measure, then update or drop the entry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import InterfaceError
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteDatastore,
)

# SQLite connections -------------------------------------------------------------------------


class StatementCachedPool(SQLiteConnectionPool):
    """Replaces `SQLiteConnectionPool._create_connection` (a copy of it, eventsourcing 9.5).

    The library opens connections with `cached_statements=True`, a statement cache of ONE: any
    two statements used in turn are re-prepared on every execute, and a catch-up runs four per
    event. A real cache prepares each statement once per connection. The copy also runs
    `connection_pragmas()` on each connection, which the library offers no hook for. Gain:
    edits per CPU-second +48% (row 1c's loop); read p50 -45% (row 2); poll p50 -27% (row 3);
    cold load p50 -30% (row 4d); rebuild (row 6) within noise."""

    statement_cache_size = 256

    def connection_pragmas(self) -> Sequence[str]:
        """Statements run on every new connection (kbes.store.sqlite sets its durability)."""
        return ()

    def _create_connection(self) -> SQLiteConnection:
        try:
            raw = sqlite3.connect(
                database=self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,  # autocommit: transactions are begun explicitly
                cached_statements=self.statement_cache_size,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as e:
            raise InterfaceError(e) from e
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            if raw.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                raw.execute("PRAGMA journal_mode=WAL")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        raw.row_factory = sqlite3.Row
        for statement in self.connection_pragmas():
            raw.execute(statement)
        return SQLiteConnection(sqlite_conn=raw, max_age=self.max_age)


def replace_pool(datastore: SQLiteDatastore, pool: SQLiteConnectionPool) -> None:
    """Put `pool` in place of the one `SQLiteDatastore.__init__` built (it takes no pool class),
    closing the old one. The test checks `__init__` still builds its pool the same way."""
    old, datastore.pool = datastore.pool, pool
    old.close()


def new_connection(pool: SQLiteConnectionPool) -> SQLiteConnection:
    """A connection of the pool's making that the pool does not hand out: the datastore's one
    writer connection and its readers (kbes.store.sqlite), which skip the pool's reader/writer
    interlock. Calls the private `SQLiteConnectionPool._create_connection`. Gain, for what
    uses these connections (kbes.store.sqlite): the writer, edits per CPU-second +29% (row 1c's
    loop); lone SELECTs on them (`query`), edits +30%, read p50 -38% (row 2), caught-up check
    -49% (row 5); read transactions on them, poll p50 -17% (row 3)."""
    return pool._create_connection()


# PostgreSQL: rows written once the events have their ids -------------------------------------


# A type checker sees the recorder the mixin goes into, so its `super()` call is checked; at
# run time the base is `object`, and psycopg is not imported.
if TYPE_CHECKING:
    from eventsourcing.postgres import PostgresApplicationRecorder as _PostgresRecorder
else:
    _PostgresRecorder = object


class AfterInsertEvents(_PostgresRecorder):
    """A mixin for `eventsourcing.postgres.PostgresApplicationRecorder` (psycopg is optional,
    so it is not imported here) that calls `after_insert_events(curs, ids, **kwargs)` once the
    events are inserted and their notification ids known: same transaction, eventsourcing's
    table lock still held, so rows written there commit in notification-id order with their
    events. The library's own write (psycopg's pipeline, one transaction) is left as it is.

    Extends the private `_fetch_ids_after_insert_events`, which the library's `insert_events`
    calls right after the insert; the documented hook, `_insert_events`, runs before it, when
    no id exists yet. The library commits what it inserted when a later step raises a Python
    error (only a database error aborts the transaction), so `after_insert_events` must not
    raise one: check its input in `_insert_events`, before the insert."""

    def after_insert_events(self, curs: Any, ids: Sequence[int], **kwargs: Any) -> None:
        """Write rows keyed by the new notification ids (kbes.store.postgres: the feed index)."""

    def _fetch_ids_after_insert_events(
        self, curs: Any, stored_events: Sequence[Any], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        if ids:
            self.after_insert_events(curs, ids, **kwargs)
        return ids


# Aggregate state in snapshots ----------------------------------------------------------------

AGGREGATE_TIMESTAMPS = ("_created_on", "_modified_on")
"""The private attributes in which eventsourcing's `Aggregate` keeps its creation and
modification times, as they appear in a snapshot's state: kbes.store.mapper decodes them as
datetimes (the snapshot's JSON holds them as text)."""


# Saving and projecting aggregates ------------------------------------------------------------


def project_unchecked(aggregate: Any, events: Iterable[Any]) -> Any:
    """Replaces `eventsourcing.application.project_aggregate` (a copy of it, eventsourcing 9.5)
    without its per-event `assert isinstance(event, CanMutateProtocol)`: a runtime Protocol
    check, which walks the protocol's members on every call. Every edit fast-forwards its
    cached article by one event, and every cold load replays up to a snapshot interval of
    them. Given as `snapshotting_projectors` and `projector_func`, both documented. Gain:
    edits per CPU-second +23% (row 1c's loop); cold load p50 halved (row 4d)."""
    for event in events:
        aggregate = event.mutate(aggregate)
    return aggregate


def save_unchecked(
    app: Application[UUID], objs: Sequence[Any], kwargs: dict[str, Any]
) -> list[Any]:
    """Replaces `Application.save` (a copy of it, eventsourcing 9.5) without the runtime
    Protocol checks of `ProcessingEvent.collect_events`: `isinstance(obj,
    DomainEventProtocol)` and `isinstance(obj, CollectEventsProtocol)` walk the protocols'
    members for every saved object. A plain class check picks out aggregates; anything else
    still goes through the library's own collection. Calls the private `_record`,
    `_take_snapshots` and `_notify` in the library's order. Gain: edits per CPU-second +24%
    (row 1c's loop); bulk imports likewise save the checks once per article."""
    processing_event: ProcessingEvent[Any] = ProcessingEvent()
    for obj in objs:
        if isinstance(obj, Aggregate):
            processing_event.events.extend(obj.collect_events())
            processing_event.aggregates[obj.id] = obj
        elif obj is not None:
            processing_event.collect_events(obj)
    processing_event.saved_kwargs.update(kwargs)
    recordings = app._record(processing_event)
    app._take_snapshots(processing_event)
    app._notify(recordings)
    app.notify(processing_event.events)  # deprecated in eventsourcing, still called by it
    return recordings


__all__ = [
    "AGGREGATE_TIMESTAMPS",
    "AfterInsertEvents",
    "StatementCachedPool",
    "new_connection",
    "project_unchecked",
    "replace_pool",
    "save_unchecked",
]
