"""The background embedding of a hybrid store's backlog (`kbes serve --search hybrid`): one
thread, from the moment it starts, embeds the published articles whose text the model lacks,
a small batch at a time, pausing between batches, with its own copy of the model so that a
search's query is never queued behind a batch. Searches answer by words alone in a knowledge
base until all of its articles have their vectors (kbes.store.hybrid), so the thread is what
brings a bulk load without `--search hybrid` to hybrid ranking; after the backlog it looks for
new saves every `idle` seconds.

Bounded CPU: one thread is at most one core, and `pause` after each batch yields it to the
searches; onnxruntime runs the batch with one thread. Progress goes to a callback (the CLI
words it), never to the log of a store."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kbes.projections.embedder import Embedder
from kbes.store.hybrid import HybridSearch

BATCH = 8
"""Texts a step embeds (about 1 s of one core on a busy machine)."""
PAUSE = 0.05
"""Seconds the thread sleeps between steps."""
IDLE = 2.0
"""Seconds between looks for new saves once the backlog is done."""


@dataclass(frozen=True)
class Progress:
    """What the background embedding has done since it started."""

    embedded: int
    """Texts embedded so far."""
    waiting: int
    """Texts still waiting, as counted at the start of this backlog."""
    seconds: float
    """Wall-clock seconds since the backlog's start."""
    cpu_seconds: float
    """CPU seconds the thread spent on it."""
    done: bool
    """The backlog is embedded (every published text had its vector at the last look)."""


class BackgroundEmbedding:
    """A thread embedding `hybrid`'s backlog until `stop`; `report` receives its progress at
    the start of a backlog, at most every `every` seconds while it works, and when it is done."""

    def __init__(
        self,
        hybrid: HybridSearch,
        report: Callable[[Progress], None] | None = None,
        *,
        batch: int = BATCH,
        pause: float = PAUSE,
        idle: float = IDLE,
        every: float = 30.0,
    ) -> None:
        self.hybrid = hybrid
        self.report = report or (lambda _: None)
        self.batch = batch
        self.pause = pause
        self.idle = idle
        self.every = every
        self.stopping = threading.Event()
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="kbes-embedding", daemon=True)

    def start(self) -> BackgroundEmbedding:
        self.hybrid.background = True
        self.thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to stop after its current batch, and wait for it."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
        self.hybrid.background = False

    def __enter__(self) -> BackgroundEmbedding:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            model = self.hybrid.background_model()
            while not self.stopping.is_set():
                waiting = self.hybrid.pending_embeddings()
                if waiting:
                    self._backlog(model, waiting)
                self.stopping.wait(self.idle)
        except BaseException as e:  # the store closed under it, a damaged file: searches
            self.failed = e  # still embed what they need, as without the thread
            self.hybrid.background = False

    def _backlog(self, model: Embedder, waiting: int) -> None:
        started, cpu = time.monotonic(), time.thread_time()
        embedded, after, told = 0, "", started

        def progress(done: bool) -> Progress:
            return Progress(
                embedded, waiting, time.monotonic() - started, time.thread_time() - cpu, done
            )

        self.report(progress(False))
        while not self.stopping.is_set():
            last, count = self.hybrid.embed_some(model, after, self.batch)
            embedded += count
            if not last:
                if not after:
                    self.report(progress(True))
                    return
                after = ""  # walk again from the start: saves made meanwhile
                continue
            after = last
            if time.monotonic() - told >= self.every:
                told = time.monotonic()
                self.report(progress(False))
            self.stopping.wait(self.pause)


__all__ = ["BATCH", "BackgroundEmbedding", "Progress"]
