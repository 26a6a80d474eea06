"""The search index as a projection: caught up from the log and the article view, one commit
per catch-up, shared by every process on the machine that opens the same views.

tantivy allows one writer per index, and it enforces that with a lock file the OS releases when
the holder dies. A process that needs the index at the log's head takes the writer for the
length of one catch-up (changes read, applied, committed with the new position, writer
dropped). A process that finds the writer taken does not write: it waits for the position
recorded in the index to reach the head it needs, reloading its reader, up to `WAIT_SECONDS`;
if the holder only went part of the way, the waiter takes the writer next. Two writers never
race, and a search after a save (from any process) finds the save.

Where it lives: beside the views' SQLite file (`<views file>.search/`); in memory for an
in-memory views database. On PostgreSQL the views are a local file per server, so each server
keeps its own index caught up from the shared log, as it keeps its views."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tantivy
from eventsourcing.persistence import ApplicationRecorder

from kbes.projections import tantivy_index
from kbes.projections.tantivy_index import Hit, Row

SUFFIX = ".search"
WAIT_SECONDS = 30.0
"""How long a process waits for another's catch-up before it reports the index busy."""
POLL_SECONDS = 0.002
LOG_CHUNK = 5000
VIEW_CHUNK = 500
FULL_BUILD_GAP = 200_000
"""Past this many events behind, the index is built whole from the article view: reading the
log for the ids it touched would cost more than the build."""

ROW_COLUMNS = "article_id, knowledge_base_id, title, content, status, updated_at, seq"


class IndexBusy(RuntimeError):
    """Another process held the index's writer for longer than `WAIT_SECONDS`."""


def index_path(views: Any) -> Path | None:
    """`<views file>.search`, or None (in memory) for an in-memory views database and for a
    throwaway one (synchronous=OFF, the simulations' and bulk loads'): nothing of its index
    needs to outlive the process, and a commit in memory writes no file."""
    pool = views.datastore.pool
    if pool.is_sqlite_memory_mode or getattr(pool, "synchronous", "FULL") == "OFF":
        return None
    return Path(str(pool.db_name) + SUFFIX)


class SearchIndex:
    """The tantivy index of the published articles of `views`, fed from `recorder`'s log."""

    def __init__(
        self,
        views: Any,
        recorder: ApplicationRecorder,
        path: Path | None = None,
        *,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self.views = views
        self.recorder = recorder
        self.path = index_path(views) if path is None else path
        self.index = tantivy_index.open_index(self.path)
        self.wait_seconds = wait_seconds
        self._lock = threading.Lock()
        self.source = views_source(views)
        self._searcher = self.index.searcher()
        self.position = tantivy_index.read_position(self._searcher, self.source)

    def search(self, knowledge_base_id: str, query: str, limit: int, *, head: int) -> list[Hit]:
        """The top hits once the index reflects the log up to `head` at least (the views'
        position after their catch-up)."""
        searcher = self.caught_up(head)
        return tantivy_index.search(searcher, knowledge_base_id, query, limit)

    def caught_up(self, head: int) -> tantivy.Searcher:
        """A searcher at `head` or later; catches the index up, or waits for the process that
        does, when it is behind. Costs nothing when already there."""
        if self.position >= head:
            return self._searcher
        with self._lock:
            self._reload()
            deadline = time.monotonic() + self.wait_seconds
            while self.position < head:
                with self._writer() as writer:
                    if writer is not None:
                        self._reload()
                        if self.position < head:
                            self._apply(writer, self.position)
                        self._reload()
                        continue
                if time.monotonic() > deadline:
                    raise IndexBusy(
                        f"the search index {self.path} stayed at position {self.position}, "
                        f"behind {head}, for {self.wait_seconds:g} s while another process "
                        "held its writer; retry, or stop the process that holds it"
                    )
                time.sleep(POLL_SECONDS)
                self._reload()
        return self._searcher

    def rebuild(self) -> int:
        """Build the index whole from the article view (after the views' own rebuild)."""
        with self._lock:
            deadline = time.monotonic() + self.wait_seconds
            while True:
                with self._writer(bulk=True) as writer:
                    if writer is not None:
                        self._apply(writer, 0)
                        break
                if time.monotonic() > deadline:
                    raise IndexBusy(f"another process held the writer of {self.path}")
                time.sleep(POLL_SECONDS)
            self._reload()
            return self.position

    def dump(self) -> list[tuple[str, str, str, str]]:
        """Every indexed article as (article id, title, content, updated_at), by id: for
        comparing two builds of the index."""
        searcher = self._searcher
        query = tantivy.Query.all_query()
        found = searcher.search(query, max(searcher.num_docs, 1), count=False).hits
        out = []
        for _, address in found:
            doc = searcher.doc(address)
            article_id = doc[tantivy_index.ARTICLE_ID][0]
            if article_id != tantivy_index.POSITION_KEY:
                out.append(
                    (
                        article_id,
                        doc[tantivy_index.TITLE][0],
                        doc[tantivy_index.CONTENT][0],
                        doc[tantivy_index.UPDATED_AT][0],
                    )
                )
        return sorted(out)

    # The one writer ---------------------------------------------------------------------

    @contextmanager
    def _writer(self, *, bulk: bool = False) -> Iterator[tantivy.IndexWriter | None]:
        """The index's writer, or None if another process (or store) holds it. Dropped on
        leaving, which releases the lock; rolled back if the block fails."""
        try:
            if bulk:
                writer = self.index.writer(tantivy_index.BULK_HEAP, 0)
            else:
                writer = self.index.writer(tantivy_index.WRITER_HEAP, 1)
        except ValueError as e:
            if "LockBusy" not in str(e):
                raise
            yield None
            return
        try:
            yield writer
        except BaseException:
            writer.rollback()
            del writer
            raise
        # Let the merges the commit started finish before the lock goes: the segments (and
        # with them the scores, which count deleted documents until a merge drops them) are
        # then the same for the same history, whatever the timing; dropping the writer would
        # abandon them. Consumes the writer, which releases the lock.
        writer.wait_merging_threads()

    def _reload(self) -> None:
        self.index.reload()
        self._searcher = self.index.searcher()
        self.position = tantivy_index.read_position(self._searcher, self.source)

    def _apply(self, writer: tantivy.IndexWriter, position: int) -> None:
        """Bring the index from `position` to the views' position in one commit."""
        head = self.views.position
        if position == 0 or head - position > FULL_BUILD_GAP:
            writer.delete_all_documents()
            with self.views.read() as c:
                c.execute(
                    f"SELECT {ROW_COLUMNS} FROM view_articles WHERE status = 'published' "
                    "ORDER BY seq"
                )
                tantivy_index.write_rows(writer, _rows(c), replace=False)
                head = max(head, _views_position(c, self.views.application_name))
        else:
            changed = self._changed(position, head)
            for i in range(0, len(changed), VIEW_CHUNK):
                chunk = changed[i : i + VIEW_CHUNK]
                with self.views.read() as c:
                    c.execute(
                        f"SELECT {ROW_COLUMNS} FROM view_articles "
                        f"WHERE article_id IN ({','.join('?' * len(chunk))})",
                        chunk,
                    )
                    tantivy_index.write_rows(writer, _rows(c), replace=True)
        tantivy_index.set_position(writer, head, self.source)
        writer.commit()

    def _changed(self, position: int, head: int) -> list[str]:
        """The ids of the aggregates the log touched after `position` up to `head`."""
        ids: dict[str, None] = {}
        start = position + 1
        while start <= head:
            notifications = self.recorder.select_notifications(
                start=start, limit=LOG_CHUNK, stop=head
            )
            if not notifications:
                break
            for notification in notifications:
                ids[str(notification.originator_id)] = None
            start = notifications[-1].id + 1
        return list(ids)


SOURCE_TABLE = "kbes_search_source"


def views_source(views: Any) -> str:
    """The id of these views, made with them (a table of its own in the views file): the
    index records it beside its position, so an index never outlives the views it follows."""
    with views.write() as c:
        c.execute(f"CREATE TABLE IF NOT EXISTS {SOURCE_TABLE} (id TEXT NOT NULL)")
        c.execute(f"SELECT id FROM {SOURCE_TABLE}")
        row = c.fetchone()
        if row is None:
            row = (uuid.uuid4().hex,)
            c.execute(f"INSERT INTO {SOURCE_TABLE} VALUES (?)", row)
    return str(row[0])


def _rows(c: Any) -> Iterator[Row]:
    """The cursor's rows, a chunk at a time: a full build never holds every article."""
    cursor = c.sqlite_cursor
    while rows := cursor.fetchmany(VIEW_CHUNK):
        for row in rows:
            yield tuple(row)  # type: ignore[misc]


def _views_position(c: Any, application_name: str) -> int:
    c.execute(
        "SELECT MAX(notification_id) FROM tracking WHERE application_name = ?",
        (application_name,),
    )
    return int(c.fetchone()[0] or 0)
