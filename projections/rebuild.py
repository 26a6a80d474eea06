"""The rebuild switch and the repair: new views built aside from the whole log, then switched in.

`kbes rebuild` replays the log into `_next` tables while readers keep the old views, then puts
the new ones in their place in one transaction. The same rebuild repairs views damaged under a
running process (a table or the tracking row dropped by hand): a view read or catch-up that
meets a missing table has them rebuilt (`healing`) and answers from the result."""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from eventsourcing.persistence import OperationalError
from eventsourcing.sqlite import SQLiteCursor

from kbes.domain.errors import Busy
from kbes.projections import articles, fold, keyword_index, tracking
from kbes.projections.catch_up import CatchUp
from kbes.projections.database import ViewsDatabase
from kbes.projections.source import EventDecoder, LogReader

NEXT = "_next"
"""The suffix of the tables a rebuild fills aside before switching them in."""
logger = logging.getLogger(__name__)


class Rebuild:
    """Replays the whole log into views built aside and switches them in."""

    def __init__(self, database: ViewsDatabase, runner: CatchUp) -> None:
        """`runner` is this process's catch-up: the switch holds it off, and moves it on."""
        self.database = database
        self.runner = runner

    def run(
        self,
        log: LogReader,
        decoder: EventDecoder,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Replay the whole log into new views built aside (the `_next` tables, batch by batch
        as any replay), then switch them in, in ONE transaction that also folds the events
        written meanwhile. Readers see the old views until that commit and the new ones after
        it, never a view part-built; a rebuild killed part-way leaves the old views as they
        were. Writers wait only for the switch."""
        db = self.database
        name = db.application_name + tracking.NEXT_TRACKING
        with db.write() as c:
            # The tracking table only: a view table dropped from outside stays missing (reads
            # of it repair the views) rather than empty (reads of it answer not_found).
            for statement in db.tracking_statements():
                c.execute(statement)
            for table in articles.TABLES:
                c.execute(f"DROP TABLE IF EXISTS {table}{NEXT}")  # a killed rebuild's
            for statement in articles.tables(NEXT):
                c.execute(statement)
            tracking.set_position(c, name, 0)
        head = log.head()
        position = 0
        while position < head:
            with db.write() as c:
                if tracking.position(c, name) != position:
                    raise _overtaken()
                last = fold.fold(c, log, decoder, position + 1, head, follow=False, suffix=NEXT)
                if last is None:
                    break
                tracking.set_position(c, name, last)
            if progress is not None:
                progress(last - position)
            position = last
        with db.lock, db.write() as c:
            if tracking.position(c, name) != position:
                raise _overtaken()
            switch(c)
            keyword_index.forget(c)
            fold.build_indexes(c)
            tracking.forget(c, name)
            db.set_position(c, position)
            db.set_search_position(c, position)
            # The events written while the new views were built, folded as any catch-up.
            head = log.head()
            while position < head:
                last = fold.fold(c, log, decoder, position + 1, head, follow=True)
                if last is None:
                    break
                position = last
            db.set_position(c, position)
            db.set_search_position(c, position)
            self.runner.position = position
        return position

    def repair(self, log: LogReader, decoder: EventDecoder) -> None:
        """Views damaged under a running process (a view table or the
        tracking table dropped by hand) are rebuilt whole, as `kbes rebuild` does."""
        logger.warning("the views are missing a table; rebuilding them from the event log")
        self.run(log, decoder)


def switch(c: SQLiteCursor) -> None:
    """Put the views built aside in place of the live ones (inside the caller's transaction).
    A views file from before the keyword engine keeps its FTS5 index until it is next
    opened (kbes.projections.views)."""
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


def _overtaken() -> Busy:
    return Busy(
        "another kbes rebuild started meanwhile and took over the views being built; "
        "it will switch them in (nothing of this one was kept), retry once it ends if need be"
    )


class Repairable(Protocol):
    """Views that know the log they are folded from (None: no repair) and can be repaired."""

    source: tuple[LogReader, EventDecoder] | None

    def repair(self, log: LogReader, decoder: EventDecoder) -> None: ...


V = TypeVar("V", bound=Repairable)
P = ParamSpec("P")
R = TypeVar("R")


def healing(method: Callable[Concatenate[V, P], R]) -> Callable[Concatenate[V, P], R]:
    """A view read or catch-up that finds a table of the views missing (dropped under a running
    process) has them rebuilt (`repair`) and runs once more, rather than failing every call
    until a restart."""

    @functools.wraps(method)
    def healed(self: V, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            if self.source is None or not missing_table(e):
                raise
        self.repair(*self.source)
        return method(self, *args, **kwargs)

    return healed


def missing_table(error: BaseException) -> bool:
    """SQLite's "no such table" (eventsourcing wraps sqlite3's error, so the cause is read)."""
    return any(
        isinstance(e, sqlite3.OperationalError | OperationalError) and "no such table" in str(e)
        for e in (error, error.__cause__, error.__context__)
    )


__all__ = ["NEXT", "Rebuild", "Repairable", "healing", "missing_table", "switch"]
