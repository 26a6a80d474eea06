"""The SQLite file the views live in: their tables and the transactions every job runs in.

With a SQLite log the views share the log's file; with a PostgreSQL log each process keeps
them in a local file (kbes.store.postgres). Several processes may share one views file: the
write transaction takes SQLite's write lock at once, so a tracking position read inside it
cannot move before commit, and a job that finds the views already past its batch skips it."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, cast

from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteTrackingRecorder

from kbes.projections import articles, keyword_index, tracking


class LoneSelect(Protocol):
    """A datastore that runs one SELECT without a transaction around it (kbes.store.sqlite)."""

    def query(
        self, statement: str, params: Sequence[Any], *, named: bool = False
    ) -> list[Any] | None:
        """The rows; None where the caller must use a transaction instead."""
        ...


class ViewsDatabase(SQLiteTrackingRecorder):
    """The view tables, the record of changes for search and the tracking table, in one SQLite
    datastore."""

    def __init__(self, datastore: SQLiteDatastore, application_name: str) -> None:
        """`datastore` also runs lone SELECTs (`LoneSelect`): kbes.store.sqlite's."""
        super().__init__(datastore)
        self.application_name = application_name
        self.select = cast(LoneSelect, datastore)
        self.lock = threading.Lock()
        """Held by this process's one writer of the views at a time (catch-up, switch, drop)."""

    def beside(self, suffix: str) -> Path | None:
        """Where a projection kept outside SQLite lives: a folder beside the views file
        (`<file><suffix>`); None for in-memory or throwaway (synchronous=OFF) views, whose
        projections stay in memory too."""
        pool = self.datastore.pool
        if pool.is_sqlite_memory_mode or getattr(pool, "synchronous", "") == "OFF":
            return None
        return Path(f"{pool.db_name}{suffix}")

    def fetch(self, statement: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one SELECT: a lone statement where the datastore runs one, else inside
        a read transaction."""
        rows = self.select.query(statement, params)
        if rows is not None:
            return rows
        with self.read() as c:
            c.execute(statement, params)
            return list(c.fetchall())

    def _create_table(self, c: SQLiteCursor) -> None:
        """eventsourcing's, able to meet the tracking rows deleted again: its migration renames
        a tracking table that has no migration row to `old1_tracking`, which failed, and with
        it every later open of the store, where an earlier migration had left that table (an
        operator's `DELETE FROM tracking` twice). The leftover holds only positions that
        migration carried over, and views that lost their tracking rows are rebuilt anyway."""
        migrating = self.datastore.single_row_tracking and self.tracking_table_exists
        if migrating and not self.tracking_migration_previous:
            c.execute("DROP TABLE IF EXISTS old1_tracking")
        super()._create_table(c)

    def tracking_statements(self) -> list[str]:
        """The tracking table only (eventsourcing's)."""
        return super().construct_create_table_statements()

    def construct_create_table_statements(self) -> list[str]:
        return [
            *self.tracking_statements(),
            *articles.SCHEMA,
            keyword_index.CHANGES,
            keyword_index.CHANGES_BY_POSITION,
            keyword_index.SOURCE,
        ]

    def position(self, c: SQLiteCursor) -> int:
        """The position the views reflect, 0 when they have folded nothing."""
        return tracking.position(c, self.application_name) or 0

    def set_position(self, c: SQLiteCursor, position: int) -> None:
        tracking.set_position(c, self.application_name, position)

    def search_position(self, c: SQLiteCursor) -> int | None:
        """The position up to which the changes for search are recorded (tracking.SEARCH_SUFFIX)."""
        return tracking.position(c, self.application_name + tracking.SEARCH_SUFFIX)

    def set_search_position(self, c: SQLiteCursor, position: int) -> None:
        tracking.set_position(c, self.application_name + tracking.SEARCH_SUFFIX, position)

    @contextmanager
    def write(self) -> Iterator[SQLiteCursor]:
        """A write transaction that takes SQLite's write lock at once (BEGIN IMMEDIATE), so the
        tracking position read inside it cannot move before commit."""
        with self.datastore.get_connection(commit=True) as connection:
            cursor = connection.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield cursor
            except BaseException:
                connection.rollback()
                raise
            connection.commit()

    @contextmanager
    def read(self) -> Iterator[SQLiteCursor]:
        with self.datastore.transaction(commit=False) as c:
            yield c


__all__ = ["LoneSelect", "ViewsDatabase"]
