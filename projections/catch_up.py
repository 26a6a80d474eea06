"""The catch-up runner: this process brings the views to the head of the log, batch by batch.

eventsourcing's ProjectionRunner needs subscriptions, which its SQLite recorder lacks, so the
views pull: read the log after the tracked position, fold a batch of events, and record the new
position in the same transaction as the rows. A process that finds the views already past a
batch (another process caught them up) skips it, so several processes can share one file.
Empty views and a long log (a new views file, or `drop`) are a replay: far bigger batches, no
record of what changed for search (the keyword indexes are built whole after it), and some
indexes left to be built whole once the replay reaches the head."""

from __future__ import annotations

from collections.abc import Callable

from eventsourcing.sqlite import SQLiteCursor

from kbes.projections import articles, fold, keyword_index, tracking
from kbes.projections.database import ViewsDatabase
from kbes.projections.source import EventDecoder, LogReader


class CatchUp:
    """Folds the log into the views up to its head; knows the position they last reached."""

    def __init__(self, database: ViewsDatabase) -> None:
        self.database = database
        self.position = 0
        """The position this process last saw its views at (tracked in the views' file)."""

    def run(
        self,
        log: LogReader,
        decoder: EventDecoder,
        *,
        head: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int | None:
        """Bring the views up to `head` (default: the log's current head); return the position,
        or None if the views lost their place: the tracking row went back or vanished under
        views that hold rows (deleted by hand), and folding from there would fold events
        twice, so the caller rebuilds them. Costs one cheap query when already caught up."""
        if head is None:
            head = log.head()
        if head <= self.position:
            return self.position
        db = self.database
        lost = False
        with db.lock:
            while self.position < head:
                with db.write() as c:
                    start = db.position(c) + 1
                    if start <= self.position or (start == 1 and _holds_rows(c)):
                        lost = True
                        break
                    if start > head:
                        self.position = start - 1
                        break
                    # What each batch changed for search is recorded, unless a replay left
                    # the keyword indexes to be built whole at the end. A replay also writes
                    # far bigger batches.
                    searched = db.search_position(c)
                    if searched is None and start == 1 and head >= fold.REPLAY_CHUNK:
                        # Empty views and a long log (a new views file): a replay.
                        db.set_search_position(c, searched := -1)
                    follow = searched is None or searched == start - 1
                    last = fold.fold(c, log, decoder, start, head, follow=follow)
                    if last is None:
                        break
                    db.set_position(c, last)
                    if follow:
                        db.set_search_position(c, last)
                if progress is not None:
                    progress(last - self.position)
                self.position = last
            self.finish_replay()
        return None if lost else self.position

    def finish_replay(self) -> None:
        """If a replay in batches (a new views file) recorded no changes for search, send the
        keyword indexes to be built whole and build the indexes the replay dropped."""
        db = self.database
        with db.read() as c:
            searched = db.search_position(c)
            if searched is None or searched == db.position(c):
                return
        with db.write() as c:
            position = db.position(c)
            if db.search_position(c) == position:
                return
            self._build_replay_indexes(c, position)

    def _build_replay_indexes(self, c: SQLiteCursor, position: int) -> None:
        """REPLAY_INDEXES, built whole from the article view, and every keyword index sent to
        be built whole from it, in one transaction."""
        fold.build_indexes(c)
        keyword_index.forget(c)
        self.database.set_search_position(c, position)

    def drop(self) -> None:
        """Empty every view and forget the position, as a new views file is: the next
        catch-up replays the whole log in batches (kbes.cli's rebuild uses `rebuild`)."""
        with self.database.lock, self.database.write() as c:
            self._clear(c)
            self.position = 0

    def _clear(self, c: SQLiteCursor) -> None:
        """Empty every view and forget its position. The keyword indexes and REPLAY_INDEXES
        are built whole once a replay reaches the head."""
        for table in articles.TABLES:
            c.execute(f"DELETE FROM {table}")
        for index in articles.REPLAY_INDEXES:
            c.execute(f"DROP INDEX IF EXISTS {index}")
        tracking.forget(c, self.database.application_name)
        self.database.set_search_position(c, -1)
        keyword_index.forget(c)


def _holds_rows(c: SQLiteCursor) -> bool:
    """Whether the views hold anything (a views file that has never folded an event does not)."""
    c.execute(
        "SELECT EXISTS (SELECT 1 FROM view_knowledge_bases) "
        "OR EXISTS (SELECT 1 FROM view_article_versions)"
    )
    return bool(c.fetchone()[0])


__all__ = ["CatchUp"]
