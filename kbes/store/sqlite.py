"""The SQLite event store, plus the small per-knowledge-base feed index that keeps a poll O(page).

The index holds `(knowledge_base_id, notification_id)` of every event an agent may see, written
in the same transaction as the events themselves (as eventsourcing's `searchabletimestamps`
example writes its side table), so a poll never decodes other knowledge bases' events."""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteFactory,
)

from kbes.domain.errors import Busy, Unavailable
from kbes.projections.source import StoredRow
from kbes.store.internals import StatementCachedPool, new_connection, replace_pool
from kbes.store.settings import SYNCHRONOUS_ENV, synchronous_mode

FEED_KWARG = "kb_feed"
"""`app.save(..., kb_feed=[kb_hex | None, ...])`: one entry per stored event, None if hidden."""

EVENTS_TABLE = "stored_events"
"""The SQLite log's table of events (eventsourcing's name), as the recorder and the probe
(kbes.store.probe) know it."""
FEED_TABLE = "kb_feed"
"""The per-knowledge-base feed index, in the log's file (and in PostgreSQL beside its log)."""


MAX_READERS = 8
"""Reader connections a datastore keeps beside its pool (each may cache up to 64 MiB)."""


class ViewsHome(Protocol):
    """A kbes infrastructure factory: where this process keeps its views (SQLite's own file,
    or a local file beside a PostgreSQL log: kbes.store.postgres)."""

    @property
    def views_datastore(self) -> KbesSQLiteDatastore: ...


class KbesConnectionPool(StatementCachedPool):
    """eventsourcing's pool, with a statement cache per connection (kbes.store.internals) and the
    pragmas a WAL event store wants on every connection."""

    synchronous = "FULL"

    def connection_pragmas(self) -> Sequence[str]:
        return (
            # FULL: an acknowledged write survives power loss (the product default). NORMAL or
            # OFF are opt-in for throwaway databases such as the simulations'.
            f"PRAGMA synchronous={self.synchronous}",
            # Sorting and temporary b-trees in memory, not in temp files.
            "PRAGMA temp_store=MEMORY",
            # A 64 MiB page cache per connection: the search index and views stay hot.
            "PRAGMA cache_size=-65536",
        )


CANNOT_WRITE = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_READONLY": "the database is read-only",
    "SQLITE_IOERR": "the disk refused a write",
}
"""SQLite's result codes (extended ones start with these) for a store that cannot write now."""


LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
"""SQLite's result codes for a lock another connection held past the lock timeout."""


def cannot_write(error: BaseException) -> Unavailable | Busy | None:
    """`unavailable` for an error of a disk that cannot take a write, `busy` for a write lock
    held elsewhere past the lock timeout; None for any other (a conflict, a bug), which stays
    what it is. eventsourcing wraps sqlite3's error, so the cause is read too."""
    for e in (error, error.__cause__, error.__context__):
        name = getattr(e, "sqlite_errorname", None) or ""
        if name.startswith(LOCKED):
            return Busy(
                f"the store is busy: another process held its write lock past the lock "
                f"timeout (KBES_LOCK_TIMEOUT) (SQLite: {e}); nothing was written, retry"
            )
        why = next((text for code, text in CANNOT_WRITE.items() if name.startswith(code)), None)
        if why is not None:
            return Unavailable(
                f"the store cannot write now: {why} (SQLite: {e}); nothing was written, retry later"
            )
    return None


class KbesSQLiteDatastore(SQLiteDatastore):
    def __init__(self, db_name: str, *, synchronous: str = "FULL", **kwargs: Any) -> None:
        super().__init__(db_name, **kwargs)
        pool = KbesConnectionPool(
            db_name=db_name,
            lock_timeout=self.pool.lock_timeout,
            pool_size=self.pool.pool_size,
            max_overflow=self.pool.max_overflow,
            pool_timeout=self.pool.pool_timeout,
            max_age=self.pool.max_age,
            pre_ping=self.pool.pre_ping,
        )
        pool.synchronous = synchronous
        replace_pool(self, pool)
        self._idle_readers: deque[SQLiteConnection] = deque()
        self._readers: list[SQLiteConnection] = []
        self._readers_lock = threading.Lock()
        self._closing = False
        self._writer: SQLiteConnection | None = None
        self._writer_lock = threading.Lock()

    @contextmanager
    def get_connection(self, *, commit: bool) -> Iterator[SQLiteConnection]:
        """Every use of a connection but a reader's passes here (eventsourcing's `transaction`
        takes its connection from here, and the views write on one), so a disk that cannot
        take a write, or a lock held elsewhere, is told apart here, once, as `unavailable` or `busy`
        (see `cannot_write`)."""
        try:
            with self._connection(commit=commit) as connection:
                yield connection
        except (sqlite3.Error, PersistenceError) as e:
            failure = cannot_write(e)
            if failure is None:
                raise
            raise failure from e

    @contextmanager
    def _connection(self, *, commit: bool) -> Iterator[SQLiteConnection]:
        """Writes to a file database take this datastore's one writer connection under a
        plain lock: what the pool's writer interlock guarantees (one writer at a time in the
        process), at less cost per edit (bench row 1). Reads and in-memory databases use the
        pool."""
        if not commit or self.pool.is_sqlite_memory_mode:
            with super().get_connection(commit=commit) as connection:
                yield connection
            return
        with self._writer_lock:
            if self._writer is None or self._writer.closed:
                if self.pool.closed:
                    raise ConnectionPoolClosedError("the datastore is closed")
                self._writer = new_connection(self.pool)
            yield self._writer

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        """Reads of a file database run on connections of their own, outside the pool: the
        pool's reader/writer interlock buys a WAL file nothing, since readers never block the
        writer. Writes, and every use of an in-memory database, go through the pool."""
        if commit or self.pool.is_sqlite_memory_mode:
            with super().transaction(commit=commit) as cursor:
                yield cursor
            return
        connection = self._reader()
        if connection is None:
            with super().transaction(commit=False) as cursor:
                yield cursor
            return
        try:
            with connection.transaction(commit=False) as cursor:
                yield cursor
        finally:
            self._release(connection)

    def query(
        self, statement: str, params: Sequence[Any], *, named: bool = False
    ) -> list[Any] | None:
        """One SELECT, without BEGIN/ROLLBACK (a lone statement is its own snapshot). It runs
        on the writer connection when no write holds it: in WAL mode a commit by another
        connection empties a connection's page cache, so right after an edit the writer's
        cache is the warm one (an edit's fast-forward read). Otherwise on a reader
        connection. Rows are plain tuples, or sqlite3.Row if `named`. None where reads go
        through the pool (in-memory databases, all readers busy): the caller uses a
        transaction instead."""
        if self.pool.is_sqlite_memory_mode:
            return None
        writer = self._writer
        if writer is not None and self._writer_lock.acquire(blocking=False):
            try:
                if not writer.closed:
                    return _fetch(writer, statement, params, named)
            finally:
                self._writer_lock.release()
        connection = self._reader()
        if connection is None:
            return None
        try:
            return _fetch(connection, statement, params, named)
        finally:
            self._release(connection)

    def _release(self, connection: SQLiteConnection) -> None:
        """A reader back from its read: idle again, or closed if the datastore was closed
        during the read (`close` leaves a reader in use to its user)."""
        with self._readers_lock:
            if not self._closing:
                self._idle_readers.append(connection)
                return
            self._readers.remove(connection)
        connection.close()

    def _reader(self) -> SQLiteConnection | None:
        """An idle reader connection, a new one, or None when MAX_READERS are all busy."""
        try:
            return self._idle_readers.pop()
        except IndexError:
            pass
        with self._readers_lock:
            if len(self._readers) >= MAX_READERS or self.pool.closed or self._closing:
                return None
            connection = new_connection(self.pool)
            self._readers.append(connection)
            return connection

    def close(self) -> None:
        if not hasattr(self, "_writer_lock"):  # __init__ did not finish
            super().close()
            return
        # A reader in use is closed by its user when its read ends (`_release`): closing a
        # connection under a read in another thread crashed the process (issue 35, item 12).
        idle = []
        with self._readers_lock:
            self._closing = True
            while True:  # each pop is atomic: a reader `_reader` took is not among these
                try:
                    connection = self._idle_readers.pop()
                except IndexError:
                    break
                self._readers.remove(connection)
                idle.append(connection)
        for connection in idle:
            connection.close()
        with self._writer_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        super().close()


def _fetch(
    connection: SQLiteConnection, statement: str, params: Sequence[Any], named: bool
) -> list[Any]:
    cursor = connection.cursor().sqlite_cursor
    cursor.row_factory = sqlite3.Row if named else None
    return cursor.execute(statement, params).fetchall()


class FeedApplicationRecorder(SQLiteApplicationRecorder):
    """Application recorder that also writes the per-knowledge-base feed index, and reads the
    log as kbes.store.feed.FeedReader says."""

    def __init__(self, datastore: SQLiteDatastore, events_table_name: str = EVENTS_TABLE) -> None:
        super().__init__(datastore, events_table_name=events_table_name)

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            f"CREATE TABLE IF NOT EXISTS {FEED_TABLE} ("
            "knowledge_base_id TEXT NOT NULL, "
            "notification_id INTEGER NOT NULL, "
            "PRIMARY KEY (knowledge_base_id, notification_id)) WITHOUT ROWID",
        ]

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        feed: Sequence[str | None] = kwargs.get(FEED_KWARG) or ()
        if feed and ids:
            rows = [(kb, nid) for kb, nid in zip(feed, ids, strict=True) if kb is not None]
            if rows:
                c.executemany(f"INSERT INTO {FEED_TABLE} VALUES (?, ?)", rows)
        return ids

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """eventsourcing's select_events; its commonest form (an aggregate's events after a
        version: every edit's fast-forward, every cold load) as one prepared statement on a
        reader connection, reusing the caller's id instead of parsing one per row. A copy of
        the library's query, pinned by tests/test_internals.py."""
        datastore = self.datastore
        if (
            lte is None
            and not desc
            and limit is None
            and isinstance(datastore, KbesSQLiteDatastore)
        ):
            key = originator_id.hex if isinstance(originator_id, UUID) else originator_id
            rows = datastore.query(self._select_after_statement, (key, -1 if gt is None else gt))
            if rows is not None:
                return [
                    StoredEvent(
                        originator_id=originator_id,
                        originator_version=version,
                        topic=topic,
                        state=state,
                    )
                    for version, topic, state in rows
                ]
        return super().select_events(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)

    # eventsourcing's SQLite recorder says `int`, but the MAX of an empty table is NULL, as
    # its ApplicationRecorder says (`int | None`); kbes reads it through `head()`.
    def max_notification_id(self) -> int | None:  # type: ignore[override]
        """The head of the log: every tool call's caught-up check, so one prepared statement
        on a reader connection (the max rowid is the last entry of the table's b-tree), None
        when the log is empty."""
        if isinstance(self.datastore, KbesSQLiteDatastore):
            rows = self.datastore.query(self.select_max_notification_id_statement, ())
            if rows is not None:
                return rows[0][0]
        return super().max_notification_id()

    @property
    def _select_after_statement(self) -> str:
        return (
            f"SELECT originator_version, topic, state FROM {self.events_table_name} "
            "WHERE originator_id = ? AND originator_version > ? ORDER BY originator_version"
        )

    def select_notification_rows(self, start: int, limit: int, stop: int) -> list[StoredRow]:
        """The log as the views fold it (kbes.projections.source.LogReader)."""
        with self.datastore.transaction(commit=False) as c:
            c.sqlite_cursor.row_factory = None  # plain tuples
            c.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {self.events_table_name} WHERE rowid >= ? AND rowid <= ? "
                "ORDER BY rowid LIMIT ?",
                (start, stop, limit),
            )
            rows = c.fetchall()
        ids: dict[str, str] = {}  # an article's events share one id text
        return [
            (nid, ids.get(oid) or ids.setdefault(oid, _canonical(oid)), version, topic, state)
            for nid, oid, version, topic, state in rows
        ]

    def head(self) -> int:
        """The head of the log: its last notification id, 0 when it is empty."""
        return self.max_notification_id() or 0

    @contextmanager
    def watching(self) -> Iterator[Callable[[], int]]:
        """The head of the log for a thread that looks at it on a timer (kbes serve's
        background catch-up), on a connection of the thread's own: its looks never take a
        reader a request is about to need, so the connections a server opens do not depend on
        how its looks and its requests happen to interleave (bench row 14)."""
        datastore = self.datastore
        if not isinstance(datastore, KbesSQLiteDatastore) or datastore.pool.is_sqlite_memory_mode:
            yield self.head
            return
        connection = new_connection(datastore.pool)
        statement = self.select_max_notification_id_statement
        try:
            yield lambda: _fetch(connection, statement, (), False)[0][0] or 0
        finally:
            connection.close()

    def select_feed_rows(
        self, knowledge_base_hex: str, after: int, limit: int
    ) -> tuple[list[StoredRow], int]:
        """One page of a knowledge base's feed and the log's head, in one read transaction
        (kbes.store.feed.FeedReader)."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                "SELECT e.rowid, e.originator_id, e.originator_version, e.topic, e.state "
                f"FROM {FEED_TABLE} f JOIN {self.events_table_name} e "
                "ON e.rowid = f.notification_id "
                "WHERE f.knowledge_base_id = ? AND f.notification_id > ? "
                "ORDER BY f.notification_id LIMIT ?",
                (knowledge_base_hex, after, limit),
            )
            rows = c.fetchall()
            c.execute(self.select_max_notification_id_statement)
            head = c.fetchone()[0] or 0
        return [(row[0], _canonical(row[1]), row[2], row[3], row[4]) for row in rows], head


class KbesSQLiteFactory(SQLiteFactory):
    """SQLiteFactory that builds our datastore and application recorder."""

    application_recorder_class = FeedApplicationRecorder
    datastore: KbesSQLiteDatastore
    """Ours from `__init__` on, in place of the one eventsourcing's factory makes."""

    @property
    def views_datastore(self) -> KbesSQLiteDatastore:
        """The views live in the log's own file, beside the events they are folded from."""
        return self.datastore

    def __init__(self, env: Any) -> None:
        """The library's datastore, rebuilt as ours from the settings it read (pinned by
        tests/test_internals.py, so a new setting there is not silently dropped here)."""
        super().__init__(env)
        old: SQLiteDatastore = self.datastore
        self.datastore = KbesSQLiteDatastore(
            old.pool.db_name,
            synchronous=synchronous_mode(self.env.get(SYNCHRONOUS_ENV)),
            lock_timeout=old.pool.lock_timeout,
            single_row_tracking=old.single_row_tracking,
            originator_id_type=old.originator_id_type,
        )
        old.close()


def _canonical(originator_id: str) -> str:
    """Stored hex (`uuid.hex`) as canonical UUID text, as `str(UUID(...))` gives it."""
    h = originator_id
    if len(h) == 32:
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"  # uuid.hex is lowercase
    return str(UUID(h))
