"""The read models, kept in SQLite and fed from the notification log: the one object the
application builds, composed of the jobs' parts.

- kbes.projections.database: the views' file, its tables and transactions;
- kbes.projections.catch_up: the runner that folds the log up to its head;
- kbes.projections.queries: the reads of the views;
- kbes.projections.rebuild: the rebuild aside and its switch, and the repair of damaged views.

Views that know their `source` heal: a read or catch-up that finds a table missing rebuilds
them and answers from the result."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore

from kbes.projections import articles, fold, keyword_index, vectors
from kbes.projections.catch_up import CatchUp
from kbes.projections.database import ViewsDatabase
from kbes.projections.keyword_index import KeywordIndexes
from kbes.projections.queries import Queries
from kbes.projections.rebuild import Rebuild, healing
from kbes.projections.source import EventDecoder, LogReader


class Views:
    """Article state, version history and the keyword indexes, with their tracking position."""

    def __init__(
        self,
        datastore: SQLiteDatastore,
        application_name: str,
        source: tuple[LogReader, EventDecoder] | None = None,
        *,
        keyword_folder_from: int = keyword_index.IN_MEMORY_BELOW,
    ) -> None:
        """`datastore` also runs lone SELECTs (kbes.projections.database.LoneSelect):
        kbes.store.sqlite's. With the `source` the views are folded from, a table of theirs
        dropped under this process is rebuilt there and then (`repair`), as a fresh process
        would find it rebuilt. A knowledge base of fewer than `keyword_folder_from` articles
        has its keyword index in memory (kbes.projections.keyword_index)."""
        self.database = ViewsDatabase(datastore, application_name)
        self.runner = CatchUp(self.database)
        self.rebuilder = Rebuild(self.database, self.runner)
        self.queries = Queries(self.database)
        self.keyword = KeywordIndexes(
            self.database,
            log=source[0] if source else None,
            in_memory_below=keyword_folder_from,
        )
        self.source = source
        # One rebuild at a time in this process: threads that find the views lost together
        # (a request and the server's background catch-up) would otherwise each start one,
        # and the later would overtake the earlier (kbes.projections.rebuild: `_overtaken`).
        # Reentrant: a rebuild that finds a table missing repairs under it.
        self.rebuilding = threading.RLock()

    @property
    def datastore(self) -> SQLiteDatastore:
        return self.database.datastore

    @property
    def position(self) -> int:
        """The position this process last saw its views at."""
        return self.runner.position

    def read(self) -> AbstractContextManager[SQLiteCursor]:
        """A read transaction on the views' file."""
        return self.database.read()

    def create_table(self) -> None:
        """Create what is missing, repair views that lost a table, bring an index from before
        the partitions up to date, and finish a replay interrupted after its last batch."""
        db = self.database
        with db.read() as c:
            c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            missing = {"tracking", *articles.TABLES} - {r[0] for r in c.fetchall()}
            tracked = 0
            if "tracking" not in missing:
                tracked = db.position(c)
        if missing and tracked and self.source is not None:
            # A table dropped from views that had folded events: created empty, it would
            # answer not_found for what the log holds. Rebuilt before anyone reads it.
            self.repair(*self.source)
        db.create_table()
        with db.read() as c:
            self.runner.position = db.position(c)
            c.execute(
                "SELECT 1 FROM sqlite_master WHERE name IN "
                f"({', '.join('?' * len(fold.LEGACY_SEARCH_TABLES))})",
                fold.LEGACY_SEARCH_TABLES,
            )
            legacy = c.fetchone() is not None
        if legacy:  # the FTS5 index of a views file from before the keyword engine
            with db.write() as c:
                fold.drop_legacy_search(c)
        self.runner.finish_replay()

    @healing
    def catch_up(
        self,
        log: LogReader,
        decoder: EventDecoder,
        *,
        head: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Bring the views up to `head` (default: the log's current head); return the position.
        Costs one cheap query when already caught up. Views that lost their place in the log
        are rebuilt."""
        position = self.runner.run(log, decoder, head=head, progress=progress)
        if position is not None:
            return position
        with self.rebuilding:
            # Another thread may have rebuilt them while this one waited: then caught up.
            position = self.runner.run(log, decoder, head=head, progress=progress)
            if position is None:
                position = self.rebuild(log, decoder, progress)
        return position

    def rebuild(
        self,
        log: LogReader,
        decoder: EventDecoder,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Replay the whole log into views built aside and switch them in (Rebuild.run), then
        build every knowledge base's keyword index from them."""
        with self.rebuilding:
            position = self.rebuilder.run(log, decoder, progress)
            with self.database.write() as c:
                vectors.discard_unsound(c)  # damaged cached embeddings, embedded again on demand
            kbs = [row["knowledge_base_id"] for row in self.queries.knowledge_bases()]
            self.keyword.build(kbs, position)
        return position

    def repair(self, log: LogReader, decoder: EventDecoder) -> None:
        with self.rebuilding:
            self.rebuilder.repair(log, decoder)

    def drop(self) -> None:
        """Empty every view and forget the position: the next catch-up replays the log."""
        self.runner.drop()

    @healing
    def article(self, article_id: str) -> Any:
        return self.queries.article(article_id)

    @healing
    def search(self, knowledge_base_id: str, query: str, limit: int) -> list[Any]:
        """The keyword engine's top hits, with the index at this process's views position."""
        return self.keyword.search(knowledge_base_id, query, limit, self.runner.position)

    @healing
    def knowledge_base(self, knowledge_base_id: str) -> Any:
        return self.queries.knowledge_base(knowledge_base_id)

    @healing
    def knowledge_bases(self) -> list[Any]:
        return self.queries.knowledge_bases()

    @healing
    def articles(self, knowledge_base_id: str) -> list[Any]:
        return self.queries.articles(knowledge_base_id)

    @healing
    def versions(self, article_id: str) -> list[Any]:
        return self.queries.versions(article_id)


__all__ = ["Views"]
