"""The server's background catch-up (`kbes serve`): one thread keeps the views and the keyword
indexes this process holds at the head of the log, so a save made by another process costs the
next search no disk commit.

Every `interval` seconds it reads the log's head (one indexed query, on a connection of its own on
SQLite); when the head moved, it folds the new events into the views, as a search would, and brings
each open index of a knowledge base they changed to the new head (kbes.projections.keyword_index:
`refresh`). A search still brings everything to the head it reads first, so a save is found at once
too (read-after-write); the thread only makes that search find nothing left to do. Indexes the
process does not hold are left to their first search. The thread takes the same locks as a search,
so the two never write an index at the same time; what it costs is counted (`Effort`)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kbes.projections.views import Views
from kbes.store.queries import Queries

logger = logging.getLogger(__name__)

INTERVAL = 0.05
"""Seconds between two looks at the log's head."""
RETRY = 2.0
"""Seconds to wait after a catch-up failed (a database gone away), before looking again."""


@dataclass(frozen=True)
class Effort:
    """What the background catch-up has done since it started."""

    events: int
    """Events of the log it brought the views past."""
    catch_ups: int
    """Times it found the head moved and caught up."""
    cpu_seconds: float
    """CPU seconds its thread spent catching up (the looks at an unmoved head excluded)."""


class KeepingUp:
    """A thread that catches the views and the held keyword indexes up as the log moves, until
    `stop`."""

    def __init__(self, queries: Queries, views: Views, *, interval: float = INTERVAL) -> None:
        self.queries = queries
        self.views = views
        self.interval = interval
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.events = 0
        self.catch_ups = 0
        self.cpu_seconds = 0.0
        self.thread = threading.Thread(target=self._run, name="kbes-keeping-up", daemon=True)

    def start(self) -> KeepingUp:
        self.thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to stop after its current catch-up, and wait for it."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout)

    def effort(self) -> Effort:
        with self.lock:
            return Effort(self.events, self.catch_ups, self.cpu_seconds)

    def _run(self) -> None:
        position = self.views.position
        while not self.stopping.is_set():
            try:
                with self.queries.log.feed.watching() as head:
                    while not self.stopping.wait(self.interval):
                        if head() > position:
                            position = self._catch_up(position)
            except Exception:
                # A database that went away, a rebuild under way: the searches report what
                # they meet; the thread looks again later, on a new connection.
                logger.warning("the background catch-up failed; trying again", exc_info=True)
                self.stopping.wait(RETRY)

    def _catch_up(self, position: int) -> int:
        """Fold the events after `position` and catch the held indexes they changed up; the
        new position."""
        started = time.thread_time()
        head = self.queries.catch_up()
        kbs = self.views.keyword.changed_between(position, head)
        held = self.views.keyword.held()
        self.views.keyword.refresh([kb for kb in kbs if kb in held], head)
        with self.lock:
            self.events += max(head - position, 0)
            self.catch_ups += 1
            self.cpu_seconds += time.thread_time() - started
        return head


__all__ = ["INTERVAL", "Effort", "KeepingUp"]
