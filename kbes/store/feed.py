"""What a recorder offers the poll tool, whichever database holds the log.

A poll pages through one knowledge base's feed, read as stored rows straight into tuples, as
the views read the whole log (kbes.projections.source). The SQLite recorder (kbes.store.sqlite)
and the PostgreSQL one (kbes.store.postgres) both implement `FeedReader`, so each query has one
path on either backend."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from kbes.projections.source import LogReader, StoredRow


class FeedReader(LogReader, Protocol):
    """The reads the store makes of the log: the views' (kbes.projections.source.LogReader) and
    one page of a knowledge base's feed, for the poll tool."""

    def select_feed_rows(
        self, knowledge_base_hex: str, after: int, limit: int
    ) -> tuple[list[StoredRow], int]:
        """One consistent read: up to `limit` visible events of one knowledge base after
        `after`, and the head of the whole log at that moment."""
        ...

    def watching(self) -> AbstractContextManager[Callable[[], int]]:
        """A way to read the head of the log again and again, for one thread that looks at it
        on a timer (kbes.store.keeping_up), released when the context ends."""
        ...


__all__ = ["FeedReader"]
