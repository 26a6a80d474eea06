"""The read models, kept in SQLite and fed from the notification log.

eventsourcing's ProjectionRunner needs subscriptions, which its SQLite recorder lacks, so the
views pull: read the log after the tracked position, fold a batch of events, and record the new
position in the same transaction as the rows. A process that finds the views already past a
batch (another process caught them up) skips it, so several processes can share one file."""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from eventsourcing.persistence import OperationalError, Tracking
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteTrackingRecorder

from kbes.errors import Busy
from kbes.feed import EventDecoder, FeedReader, LoneSelect, full_decode
from kbes.internals import insert_tracking, max_tracking_id
from kbes.projections import articles, search

BATCH_SIZE = 500
REPLAY_CHUNK = 5000
REPLAY_EVENTS = 200_000
REPLAY_BYTES = 64 * 1024 * 1024
"""A replay (rebuild) reads the log in chunks and writes one transaction per REPLAY_EVENTS events
or REPLAY_BYTES of folded rows: each B-tree page is then rewritten once for many rows rather
than once or more per chunk, in bounded memory (kbes bench row 6)."""
log = logging.getLogger(__name__)

NEXT = "_next"
"""The suffix of the tables a rebuild fills aside before switching them in."""
NEXT_TRACKING = ".next"
"""Tracking row of the views being built aside: the position they reflect."""

SEARCH_SUFFIX = ".search"
"""Tracking row of the search index: the position it reflects, -1 after a drop (rebuilt whole
at the end of the replay), absent in a database older than it (follows the views)."""


P = ParamSpec("P")
R = TypeVar("R")


def _healing(method: Callable[Concatenate[Views, P], R]) -> Callable[Concatenate[Views, P], R]:
    """A view read or catch-up that finds a table of the views missing (dropped under a running
    process) has them rebuilt (`Views.repair`) and runs once more, rather than failing every
    call until a restart."""

    @functools.wraps(method)
    def healed(self: Views, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            if self.source is None or not _missing_table(e):
                raise
        self.repair(*self.source)
        return method(self, *args, **kwargs)

    return healed


def _missing_table(error: BaseException) -> bool:
    """SQLite's "no such table" (eventsourcing wraps sqlite3's error, so the cause is read)."""
    return any(
        isinstance(e, sqlite3.OperationalError | OperationalError) and "no such table" in str(e)
        for e in (error, error.__cause__, error.__context__)
    )


class Views(SQLiteTrackingRecorder):
    """Article state, version history and the search index, with their tracking position."""

    def __init__(
        self,
        datastore: SQLiteDatastore,
        application_name: str,
        source: tuple[FeedReader, EventDecoder] | None = None,
    ) -> None:
        """`datastore` also runs lone SELECTs (kbes.feed.LoneSelect): kbes.recorder's. With
        the `source` the views are folded from, a table of theirs dropped under this process
        is rebuilt there and then (`repair`), as a fresh process would find it rebuilt."""
        super().__init__(datastore)
        self._select = cast(LoneSelect, datastore)
        self.application_name = application_name
        self.source = source
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
        with self.read() as c:
            c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            missing = {"tracking", *articles.TABLES} - {r[0] for r in c.fetchall()}
            tracked = None
            if "tracking" not in missing:
                tracked = max_tracking_id(self, c, self.application_name)
        if missing and tracked and self.source is not None:
            # A table dropped from views that had folded events: created empty, it would
            # answer not_found for what the log holds. Rebuilt before anyone reads it.
            self.repair(*self.source)
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

    @_healing
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
        lost = False
        with self._lock:
            while self.position < head:
                with self.write() as c:
                    start = (max_tracking_id(self, c, self.application_name) or 0) + 1
                    if start <= self.position or (start == 1 and _holds_rows(c)):
                        # The tracking row went back or vanished under views that hold rows
                        # (deleted by hand): folding from there would fold events twice.
                        lost = True
                        break
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
                    last = self._fold(c, recorder, mapper, start, head, follow=follow)
                    if last is None:
                        break
                    insert_tracking(self, c, Tracking(self.application_name, last))
                    if follow:
                        self._set_search_position(c, last)
                if progress is not None:
                    progress(last - self.position)
                self.position = last
            self._finish_replay()
        if lost:
            return self.rebuild(recorder, mapper, progress)
        return self.position

    def rebuild(
        self,
        recorder: FeedReader,
        mapper: EventDecoder,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Replay the whole log into new views built aside (the `_next` tables, batch by batch
        as any replay), then switch them in, in ONE transaction that also folds the events
        written meanwhile. Readers see the old views until that commit and the new ones after
        it, never a view part-built; a rebuild killed part-way leaves the old views as they
        were. Writers wait only for the switch."""
        name = self.application_name + NEXT_TRACKING
        with self.write() as c:
            # The tracking table only: a view table dropped from outside stays missing (reads
            # of it repair the views) rather than empty (reads of it answer not_found).
            for statement in super().construct_create_table_statements():
                c.execute(statement)
            for table in articles.TABLES:
                c.execute(f"DROP TABLE IF EXISTS {table}{NEXT}")  # a killed rebuild's
            for statement in articles.tables(NEXT):
                c.execute(statement)
            _set_position(c, name, 0)
        head = recorder.max_notification_id() or 0
        position = 0
        while position < head:
            with self.write() as c:
                if _position(c, name) != position:
                    raise _overtaken()
                last = self._fold(c, recorder, mapper, position + 1, head, follow=False, aside=True)
                if last is None:
                    break
                _set_position(c, name, last)
            if progress is not None:
                progress(last - position)
            position = last
        with self.write() as c:  # the search index, built whole, aside
            c.execute(search.SCHEMA.replace("search_index", f"search_index{NEXT}", 1))
            search.fill(c, NEXT)
        with self._lock, self.write() as c:
            if _position(c, name) != position:
                raise _overtaken()
            _switch(c)
            self._build_indexes(c)
            c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
            _set_position(c, self.application_name, position)
            self._set_search_position(c, position)
            # The events written while the new views were built, folded as any catch-up.
            head = recorder.max_notification_id() or 0
            while position < head:
                last = self._fold(c, recorder, mapper, position + 1, head, follow=True)
                if last is None:
                    break
                position = last
            _set_position(c, self.application_name, position)
            self._set_search_position(c, position)
            self.position = position
        return position

    def repair(self, recorder: FeedReader, mapper: EventDecoder) -> None:
        """Views damaged under a running process (a view table, the search index or the
        tracking table dropped by hand) are rebuilt whole, as `kbes rebuild` does."""
        log.warning("the views are missing a table; rebuilding them from the event log")
        self.rebuild(recorder, mapper)

    def _fold(
        self,
        c: SQLiteCursor,
        recorder: FeedReader,
        mapper: EventDecoder,
        start: int,
        head: int,
        *,
        follow: bool,
        aside: bool = False,
    ) -> int | None:
        """Fold one batch of the log from `start` into the views (the `_next` ones if `aside`;
        the search index too if `follow`); returns the last notification id folded, None when
        there was none."""
        batch = articles.Batch(NEXT if aside else "")
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
        if last is not None:
            batch.write(c, index_search=follow)
        return last

    def _search_position(self, c: SQLiteCursor) -> int | None:
        c.execute(self.select_max_tracking_id_statement, (self.application_name + SEARCH_SUFFIX,))
        return c.fetchone()[0]  # type: ignore[no-any-return]

    def _set_search_position(self, c: SQLiteCursor, position: int) -> None:
        name = self.application_name + SEARCH_SUFFIX
        c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
        c.execute("INSERT INTO tracking VALUES (?, ?)", (name, position))

    def _finish_replay(self) -> None:
        """If a replay in batches (a new views file) left the search index behind, fill it
        whole from the article view and build the indexes the replay dropped."""
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
            self._build_replay_indexes(c, position)

    def _build_replay_indexes(self, c: SQLiteCursor, position: int) -> None:
        """The search index (the published articles, as indexing batch by batch would have
        left them) and REPLAY_INDEXES, built whole from the article view, in one transaction."""
        self._build_indexes(c)
        _recreate_search_index(c)
        search.fill(c)
        self._set_search_position(c, position)

    @staticmethod
    def _build_indexes(c: SQLiteCursor) -> None:
        """The secondary indexes a replay or a rebuild leaves out, built whole."""
        # All IF NOT EXISTS. SQLite sorts in runs of up to cache_size: smaller runs than the
        # connection's 64 MiB cache keep the peak memory of a large rebuild down (kbes bench
        # row 6b).
        c.execute("PRAGMA cache_size")
        cache_size = c.fetchone()[0]
        c.execute("PRAGMA cache_size=-8192")
        try:
            for statement in articles.INDEXES:
                c.execute(statement)
        finally:
            c.execute(f"PRAGMA cache_size={int(cache_size)}")

    def drop(self) -> None:
        """Empty every view and forget the position, as a new views file is: the next
        catch-up replays the whole log in batches (kbes.cli's rebuild uses `rebuild`)."""
        with self._lock, self.write() as c:
            self._clear(c)
            self.position = 0

    def _clear(self, c: SQLiteCursor) -> None:
        """Empty every view and forget its position. The search index and REPLAY_INDEXES are
        built whole once a replay reaches the head."""
        for table in articles.TABLES:
            if table == "search_index":
                _recreate_search_index(c)
            else:
                c.execute(f"DELETE FROM {table}")
        for index in articles.REPLAY_INDEXES:
            c.execute(f"DROP INDEX IF EXISTS {index}")
        c.execute("DELETE FROM tracking WHERE application_name = ?", (self.application_name,))
        self._set_search_position(c, -1)

    # Queries -----------------------------------------------------------------------------

    @_healing
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

    @_healing
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

    @_healing
    def knowledge_base(self, knowledge_base_id: str) -> Any:
        with self.read() as c:
            c.execute(
                "SELECT knowledge_base_id, name, created_at FROM view_knowledge_bases "
                "WHERE knowledge_base_id = ?",
                (knowledge_base_id,),
            )
            return c.fetchone()

    @_healing
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

    @_healing
    def articles(self, knowledge_base_id: str) -> list[Any]:
        with self.read() as c:
            c.execute(
                "SELECT article_id, title, status, version, updated_at FROM view_articles "
                "WHERE knowledge_base_id = ? ORDER BY title, article_id",
                (knowledge_base_id,),
            )
            return c.fetchall()

    @_healing
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


def _overtaken() -> Busy:
    return Busy(
        "another kbes rebuild started meanwhile and took over the views being built; "
        "it will switch them in (nothing of this one was kept), retry once it ends if need be"
    )


def _switch(c: SQLiteCursor) -> None:
    """Put the views built aside in place of the live ones (inside the caller's transaction).
    FTS5 renames its own shadow tables with the search index."""
    # Debian's and others' SQLite zeroes every page a DROP frees (secure_delete), which dirties
    # the whole of the old views inside this transaction (kbes bench row 6b). The views hold
    # nothing the log does not, so their freed pages are left as they are.
    c.execute("PRAGMA secure_delete")
    secure_delete = c.fetchone()[0]
    c.execute("PRAGMA secure_delete=FAST")
    try:
        for table in articles.TABLES:
            c.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        c.execute(f"PRAGMA secure_delete={('OFF', 'ON', 'FAST')[int(secure_delete)]}")
    for table in articles.TABLES:
        c.execute(f"ALTER TABLE {table}{NEXT} RENAME TO {table}")


def _position(c: SQLiteCursor, name: str) -> int | None:
    c.execute("SELECT MAX(notification_id) FROM tracking WHERE application_name = ?", (name,))
    return c.fetchone()[0]  # type: ignore[no-any-return]


def _set_position(c: SQLiteCursor, name: str, position: int) -> None:
    """A tracking row set outright (eventsourcing's insert only ever moves one forward)."""
    c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
    c.execute("INSERT INTO tracking VALUES (?, ?)", (name, position))


def _holds_rows(c: SQLiteCursor) -> bool:
    """Whether the views hold anything (a views file that has never folded an event does not)."""
    c.execute(
        "SELECT EXISTS (SELECT 1 FROM view_knowledge_bases) "
        "OR EXISTS (SELECT 1 FROM view_article_versions)"
    )
    return bool(c.fetchone()[0])


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
            event = full_decode(mapper, (nid, oid, version, topic, state))
            items.append((type(event), oid, version, event, nid))
        else:
            items.append((decoded[0], oid, version, decoded[1], nid))
    return items, rows[-1][0]
