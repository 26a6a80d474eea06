"""The read models, kept in SQLite and fed from the notification log.

eventsourcing's ProjectionRunner needs subscriptions, which its SQLite recorder lacks, so the
views pull: read the log after the tracked position, fold a batch of events, and record the new
position in the same transaction as the rows. A process that finds the views already past a
batch (another process caught them up) skips it, so several processes can share one file."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, Mapper, Tracking
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteTrackingRecorder
from kbes.projections import articles, search

BATCH_SIZE = 500


class Views(SQLiteTrackingRecorder):
    """Article state, version history and the search index, with their tracking position."""

    def __init__(self, datastore: SQLiteDatastore, application_name: str) -> None:
        super().__init__(datastore)
        self.application_name = application_name
        self._lock = threading.Lock()
        self.position = 0

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            *articles.SCHEMA,
            search.SCHEMA,
        ]

    def create_table(self) -> None:
        super().create_table()
        self.position = self.max_tracking_id(self.application_name) or 0

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

    def catch_up(
        self,
        recorder: ApplicationRecorder,
        mapper: Mapper,
        *,
        head: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Bring the views up to `head` (default: the log's current head); return the position.
        Costs one cheap query when already caught up."""
        if head is None:
            head = recorder.max_notification_id() or 0
        if head <= self.position:
            return self.position
        with self._lock:
            while self.position < head:
                with self.write() as c:
                    start = (self._max_tracking_id(self.application_name, c) or 0) + 1
                    if start > head:
                        self.position = start - 1
                        break
                    notifications = recorder.select_notifications(
                        start=start, limit=BATCH_SIZE, stop=head
                    )
                    if not notifications:
                        break
                    for notification in notifications:
                        articles.apply(c, mapper.to_domain_event(notification), notification.id)
                    last = notifications[-1].id
                    self._insert_tracking(c, Tracking(self.application_name, last))
                if progress is not None:
                    progress(last - self.position)
                self.position = last
        return self.position

    def drop(self) -> None:
        """Empty every view and forget the position, ready for a replay of the whole log."""
        with self._lock, self.write() as c:
            for table in articles.TABLES:
                c.execute(f"DELETE FROM {table}")
            c.execute("DELETE FROM tracking WHERE application_name = ?", (self.application_name,))
            self.position = 0

    # Queries -----------------------------------------------------------------------------

    def article(self, article_id: str) -> Any:
        with self.read() as c:
            c.execute(
                "SELECT article_id, knowledge_base_id, title, content, status, version, "
                "updated_at FROM view_articles WHERE article_id = ?",
                (article_id,),
            )
            return c.fetchone()

    def search(self, knowledge_base_id: str, expression: str, limit: int) -> list[Any]:
        with self.read() as c:
            c.execute(search.SEARCH_SQL, (expression, knowledge_base_id, limit))
            return c.fetchall()

    def knowledge_base(self, knowledge_base_id: str) -> Any:
        with self.read() as c:
            c.execute(
                "SELECT knowledge_base_id, name, created_at FROM view_knowledge_bases "
                "WHERE knowledge_base_id = ?",
                (knowledge_base_id,),
            )
            return c.fetchone()

    def knowledge_bases(self) -> list[Any]:
        with self.read() as c:
            c.execute(
                "SELECT k.knowledge_base_id, k.name, k.created_at, "
                "(SELECT COUNT(*) FROM view_articles a "
                " WHERE a.knowledge_base_id = k.knowledge_base_id) AS articles, "
                "(SELECT COUNT(*) FROM view_articles a "
                " WHERE a.knowledge_base_id = k.knowledge_base_id AND a.status = 'published')"
                " AS published "
                "FROM view_knowledge_bases k ORDER BY k.created_at, k.knowledge_base_id"
            )
            return c.fetchall()

    def articles(self, knowledge_base_id: str) -> list[Any]:
        with self.read() as c:
            c.execute(
                "SELECT article_id, title, status, version, updated_at FROM view_articles "
                "WHERE knowledge_base_id = ? ORDER BY title, article_id",
                (knowledge_base_id,),
            )
            return c.fetchall()

    def versions(self, article_id: str) -> list[Any]:
        with self.read() as c:
            c.execute(
                "SELECT version, updated_at, type, notification_id FROM view_article_versions "
                "WHERE article_id = ? ORDER BY version",
                (article_id,),
            )
            return c.fetchall()

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every view, in a stable order: for comparing two builds of the views."""
        with self.read() as c:
            out: dict[str, list[tuple[Any, ...]]] = {}
            for table, order in (
                ("view_knowledge_bases", "knowledge_base_id"),
                ("view_articles", "article_id"),
                ("view_article_versions", "article_id, version"),
            ):
                c.execute(f"SELECT * FROM {table} ORDER BY {order}")
                rows = [tuple(row) for row in c.fetchall()]
                if table == "view_articles":
                    rows = [row[1:] for row in rows]  # seq depends on insertion order only
                out[table] = rows
            c.execute(
                "SELECT a.article_id, s.title, s.content FROM search_index s "
                "JOIN view_articles a ON a.seq = s.rowid ORDER BY a.article_id"
            )
            out["search_index"] = [tuple(row) for row in c.fetchall()]
            return out
