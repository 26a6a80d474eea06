"""The read models, kept in SQLite and fed from the notification log.

eventsourcing's ProjectionRunner needs subscriptions, which its SQLite recorder lacks, so the
views pull: read the log after the tracked position, fold a batch of events, and record the new
position in the same transaction as the rows. A process that finds the views already past a
batch (another process caught them up) skips it, so several processes can share one file."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast
from uuid import UUID

from eventsourcing.persistence import Notification, Tracking
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteTrackingRecorder

from kbes.feed import EventDecoder, FeedReader, LoneSelect
from kbes.internals import insert_tracking, max_tracking_id
from kbes.projections import articles, search

BATCH_SIZE = 500
REPLAY_CHUNK = 5000
REPLAY_EVENTS = 200_000
REPLAY_BYTES = 64 * 1024 * 1024
"""A replay (rebuild) reads the log in chunks and writes one transaction per REPLAY_EVENTS events
or REPLAY_BYTES of folded rows: each B-tree page is then rewritten once for many rows rather
than once or more per chunk, in bounded memory (kbes bench row 6)."""
SEARCH_SUFFIX = ".search"
"""Tracking row of the search index: the position it reflects, -1 after a drop (rebuilt whole
at the end of the replay), absent in a database older than it (follows the views)."""


class Views(SQLiteTrackingRecorder):
    """Article state, version history and the search index, with their tracking position."""

    def __init__(self, datastore: SQLiteDatastore, application_name: str) -> None:
        """`datastore` also runs lone SELECTs (kbes.feed.LoneSelect): kbes.recorder's."""
        super().__init__(datastore)
        self._select = cast(LoneSelect, datastore)
        self.application_name = application_name
        self._lock = threading.Lock()
        self.position = 0

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            *articles.SCHEMA,
            search.SCHEMA,
            search.PARTITIONS,
        ]

    def create_table(self) -> None:
        super().create_table()
        self.position = self.max_tracking_id(self.application_name) or 0
        with self.read() as c:
            outdated = search.outdated(c)
        if outdated:  # an index from before the partitions: rebuilt whole from the views
            with self.write() as c:
                _recreate_search_index(c)
                self._set_search_position(c, -1)
        self._finish_replay()  # a replay interrupted after its last batch

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
        recorder: FeedReader,
        mapper: EventDecoder,
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
                    start = (max_tracking_id(self, c, self.application_name) or 0) + 1
                    if start > head:
                        self.position = start - 1
                        break
                    # The search index follows batch by batch, unless a replay left it to
                    # be built whole at the end (one bulk insert instead of an update per
                    # article per batch). A replay also writes far bigger batches.
                    searched = self._search_position(c)
                    if searched is None and start == 1 and head >= REPLAY_CHUNK:
                        # Empty views and a long log (a new views file): a replay.
                        self._set_search_position(c, searched := -1)
                    follow = searched is None or searched == start - 1
                    batch = articles.Batch()
                    last: int | None = None
                    while True:
                        items, read = read_items(
                            recorder, mapper, start, BATCH_SIZE if follow else REPLAY_CHUNK, head
                        )
                        if read is None:
                            break
                        batch.add(c, items)
                        last, start = read, read + 1
                        if (
                            follow
                            or start > head
                            or batch.events >= REPLAY_EVENTS
                            or batch.bytes >= REPLAY_BYTES
                        ):
                            break
                    if last is None:
                        break
                    batch.write(c, index_search=follow)
                    insert_tracking(self, c, Tracking(self.application_name, last))
                    if follow:
                        self._set_search_position(c, last)
                if progress is not None:
                    progress(last - self.position)
                self.position = last
            self._finish_replay()
        return self.position

    def _search_position(self, c: SQLiteCursor) -> int | None:
        c.execute(self.select_max_tracking_id_statement, (self.application_name + SEARCH_SUFFIX,))
        return c.fetchone()[0]  # type: ignore[no-any-return]

    def _set_search_position(self, c: SQLiteCursor, position: int) -> None:
        name = self.application_name + SEARCH_SUFFIX
        c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
        c.execute("INSERT INTO tracking VALUES (?, ?)", (name, position))

    def _finish_replay(self) -> None:
        """If a replay left the search index behind, fill it whole from the article view in one
        transaction (the published articles, as indexing batch by batch would have left them),
        and build the indexes the replay dropped."""
        with self.read() as c:
            searched = self._search_position(c)
            if searched is None or searched == (
                max_tracking_id(self, c, self.application_name) or 0
            ):
                return
        with self.write() as c:
            position = max_tracking_id(self, c, self.application_name) or 0
            if self._search_position(c) == position:
                return
            # All IF NOT EXISTS: builds the dropped indexes. SQLite sorts in runs of up to
            # cache_size: smaller runs than the connection's 64 MiB cache keep the peak memory
            # of a large rebuild down (kbes bench row 6b).
            c.execute("PRAGMA cache_size")
            cache_size = c.fetchone()[0]
            c.execute("PRAGMA cache_size=-8192")
            try:
                for statement in articles.SCHEMA:
                    c.execute(statement)
            finally:
                c.execute(f"PRAGMA cache_size={int(cache_size)}")
            _recreate_search_index(c)
            search.fill(c)
            self._set_search_position(c, position)

    def drop(self) -> None:
        """Empty every view and forget the position, ready for a replay of the whole log. The
        search index and REPLAY_INDEXES are built whole once the replay reaches the head."""
        with self._lock, self.write() as c:
            for table in articles.TABLES:
                if table == "search_index":
                    _recreate_search_index(c)
                else:
                    c.execute(f"DELETE FROM {table}")
            for index in articles.REPLAY_INDEXES:
                c.execute(f"DROP INDEX IF EXISTS {index}")
            c.execute("DELETE FROM tracking WHERE application_name = ?", (self.application_name,))
            self._set_search_position(c, -1)
            self.position = 0

    # Queries -----------------------------------------------------------------------------

    def article(self, article_id: str) -> Any:
        statement = (
            "SELECT article_id, knowledge_base_id, title, content, status, version, "
            "updated_at FROM view_articles WHERE article_id = ?"
        )
        rows = self._query(statement, (article_id,))
        if rows is not None:
            return rows[0] if rows else None
        with self.read() as c:
            c.execute(statement, (article_id,))
            return c.fetchone()

    def search(self, knowledge_base_id: str, expression: str, limit: int) -> list[Any]:
        params = (expression, knowledge_base_id, limit)
        rows = self._query(search.SEARCH_SQL, params)
        if rows is not None:
            return rows
        with self.read() as c:
            c.execute(search.SEARCH_SQL, params)
            return c.fetchall()

    def _query(self, statement: str, params: tuple[Any, ...]) -> list[Any] | None:
        """A read tool's one statement without a transaction around it (a lone SELECT is its
        own snapshot); None where the datastore must use a transaction (kbes.recorder)."""
        return self._select.query(statement, params, named=True)

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
                f"JOIN view_articles a ON a.seq = s.rowid & {search.SEQ_MASK} ORDER BY a.article_id"
            )
            out["search_index"] = [tuple(row) for row in c.fetchall()]
            return out


def _recreate_search_index(c: SQLiteCursor) -> None:
    """Empty the FTS5 index by dropping and recreating it: a DELETE would tokenize every
    stored document again to remove its terms."""
    c.execute("DROP TABLE IF EXISTS search_index")
    c.execute(search.SCHEMA)


def read_items(
    recorder: FeedReader, mapper: EventDecoder, start: int, limit: int, stop: int
) -> tuple[list[articles.Item], int | None]:
    """Up to `limit` events of the log from `start` (to `stop`) as items to fold, and the last
    notification id read (None at the end). Straight from the rows, decoding each event's
    fields but building no Notification or domain event, except for events that need
    upcasting or are snapshots, which go through the mapper's full path."""
    rows = recorder.select_notification_rows(start, limit, stop)
    if not rows:
        return [], None
    items: list[articles.Item] = []
    decode = mapper.decode_fields
    for nid, oid, version, topic, state in rows:
        decoded = decode(topic, state)
        if decoded is None:
            notification = Notification(
                id=nid,
                originator_id=UUID(oid),
                originator_version=version,
                topic=topic,
                state=state,
            )
            event = mapper.to_domain_event(notification)
            items.append((type(event), oid, version, event, nid))
        else:
            items.append((decoded[0], oid, version, decoded[1], nid))
    return items, rows[-1][0]
