"""The keyword engine as a projection: a tantivy index per knowledge base, beside the views,
caught up from the views when a search of that knowledge base needs it.

Why one index per knowledge base: a question's common words match most of its articles, and a
shared index with the knowledge base as a filter term paid for the other knowledge bases' rows
at p99 (docs/decisions.md). Each index lives in `<views file>.keyword/<knowledge base id>/`;
in memory for an in-memory or throwaway (synchronous=OFF) views database.

What to apply: the views record, in the transaction that folds a batch, which articles of which
knowledge base it changed (`CHANGES`, at the batch's last position). A catch-up reads the
article ids changed after the index's position, reads those rows from the view, and replaces
each document (a delete by id, an add if published) and the position document in ONE commit:
applying a range twice changes nothing, and an unpublished article leaves the index in the
commit that moves past its unpublishing. An index with no position, or one built beside other
views (a rebuild, a drop: `SOURCE_TABLE`'s id changes), is built whole from the view.

One writer: tantivy guards each index with a lock file the OS releases when its holder dies. A
process that needs an index at position H takes its writer for one catch-up; one that finds it
held waits, reloading, for the recorded position to reach H, and takes the writer if the
holder stopped short; after `WAIT_SECONDS` it reports the index busy.

Trusted for nothing it does not check (issue 35): each commit's position document names the
log's event at its position (a mark), and a process checks it against the log before it uses a
commit it did not make. An index from another log, or past the log's head (a backup restored
beside a newer index, a power cut that cost the log its tail), is built whole again. An index
whose files fail (damaged, missing, a stray file of a killed commit) is moved aside and built
whole from the views; one the machine cannot serve now (a full disk, an unwritable folder, no
threads left) costs that knowledge base's searches, answered `unavailable`, until it can.

Two homes (issue 31): a knowledge base of fewer than `IN_MEMORY_BELOW` articles has its index in
this process's memory, built whole from the views at its first search (a few milliseconds, no
disk commit, no thread, no memory map); a larger one has its folder. Each process keeps at most
`OPEN_AT_MOST` folders open (each holds a thread and memory maps) and `IN_MEMORY_AT_MOST`
indexes in memory, the least recently used let go first: a server's threads, maps and memory do
not grow with the number of knowledge bases it has searched. Articles are never deleted from
the views, so a knowledge base only ever moves one way, to its folder, at the first catch-up
that finds it grown; the folder is built whole then, from the views."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import tantivy

from kbes.domain.errors import Busy, IndexUnavailable
from kbes.projections import index_failure
from kbes.projections import keyword_schema as K

if TYPE_CHECKING:
    from kbes.projections.database import ViewsDatabase
    from kbes.projections.source import LogReader

T = TypeVar("T")

logger = logging.getLogger(__name__)

CHANGES = (
    "CREATE TABLE IF NOT EXISTS keyword_changes ("
    "knowledge_base_id TEXT NOT NULL, position INTEGER NOT NULL, article_id TEXT NOT NULL, "
    "PRIMARY KEY (knowledge_base_id, position, article_id)) WITHOUT ROWID"
)
CHANGES_BY_POSITION = (
    "CREATE INDEX IF NOT EXISTS keyword_changes_by_position ON keyword_changes (position)"
)
"""For a server's background catch-up: which knowledge bases the log's new events changed."""
SOURCE_TABLE = "keyword_source"
SOURCE = f"CREATE TABLE IF NOT EXISTS {SOURCE_TABLE} (id TEXT NOT NULL)"
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.002
WRITER_HEAP = 15_000_000
BULK_HEAP = 48_000_000
ROW = "article_id, title, content, status, updated_at, seq"
BUILD_CHUNK = 1000
DEFER_AT_MOST = 32
"""A search is answered from the index's last commit while at most this many articles changed
since, none of whose documents holds any of its terms, as committed or as it now is: the same
articles match, with the same words and lengths. Only the collection's averages (its document
count and mean length) lag, as tantivy's already do by deleted documents until a merge. Each
commit costs a fixed few milliseconds (docs/performance.md), so this spares the searches a
save cannot change."""
TERMS_KEPT = 4096
OPEN_AT_MOST = 16
"""Keyword index folders a process keeps open, the least recently used closed first: each holds
a thread (tantivy's meta-file watcher, started by the bindings before kbes can ask for a manual
reader) and about fourteen memory maps, and a server that had searched thousands of knowledge
bases could start no thread more (issue 35). Closing one releases both within a second;
reopening costs about a millisecond."""
IN_MEMORY_BELOW = 100
"""Articles (of any status) below which a knowledge base's index lives in memory: building it
whole there costs about 80 microseconds an article, so at most about as much as one commit to a
folder costs, and it needs no thread, no memory map and no file (docs/decisions.md)."""
IN_MEMORY_AT_MOST = 1024
"""Indexes a process keeps in memory, the least recently used let go first (built again from
the views at the next search)."""


def record_changes(c: Any, changed: list[tuple[str, str]], position: int) -> None:
    """Inside a catch-up's transaction: the (knowledge base, article) pairs it changed."""
    c.executemany(
        "INSERT OR IGNORE INTO keyword_changes VALUES (?, ?, ?)",
        [(kb, position, article_id) for kb, article_id in changed],
    )


def forget(c: Any) -> None:
    """Inside a rebuild's or a drop's transaction: every index is to be built whole."""
    c.execute(CHANGES)
    c.execute(SOURCE)
    c.execute("DELETE FROM keyword_changes")
    c.execute(f"DELETE FROM {SOURCE_TABLE}")
    c.execute(f"INSERT INTO {SOURCE_TABLE} VALUES (?)", (uuid.uuid4().hex,))


class KeywordIndexes:
    """The keyword index of each knowledge base of one views database."""

    def __init__(
        self,
        database: ViewsDatabase,
        *,
        log: LogReader | None = None,
        wait_seconds: float = WAIT_SECONDS,
        in_memory_below: int = IN_MEMORY_BELOW,
    ) -> None:
        """`log` is the log the views fold: each commit is marked with its event at the
        commit's position, and checked against it (None: no check). A knowledge base of fewer
        than `in_memory_below` articles has its index in memory (0: every one in a folder)."""
        self.in_memory_below = in_memory_below
        self.database = database
        self.log = log
        self.root = database.beside(".keyword")
        self.wait_seconds = wait_seconds
        self.lock = threading.Lock()
        self.open: OrderedDict[str, tantivy.Index] = OrderedDict()
        """The folders open, least recently used first."""
        self.memory: OrderedDict[str, tantivy.Index] = OrderedDict()
        """The indexes held in memory, least recently used first."""
        self.large: set[str] = set()
        """Knowledge bases known to hold `IN_MEMORY_BELOW` articles or more: their index has
        its folder (articles are never deleted from the views, so one stays large)."""
        self.verified: set[tuple[int, str]] = set()
        """(position, mark) pairs checked against the log."""
        self.distrusted: set[tuple[int, str]] = set()
        """(position, mark) pairs the log disowned, warned about once."""
        self.terms: dict[tuple[str, str, int], frozenset[str]] = {}
        """The terms of an article's document, by views id, article and version."""
        self.searchers: dict[str, tuple[str, int, tantivy.Searcher]] = {}
        """Per knowledge base, the views id and position this process's searcher is known to
        reflect (a commit, or no change since one): no reload until the views move on."""

    def source(self) -> str:
        """The id of the views the indexes follow: one lone SELECT, and a write only for views
        that have none yet."""
        rows = self.database.fetch(f"SELECT id FROM {SOURCE_TABLE}", ())
        if rows:
            return str(rows[0][0])
        with self.database.write() as c:
            c.execute(CHANGES)
            c.execute(CHANGES_BY_POSITION)
            c.execute(SOURCE)
            c.execute(f"SELECT id FROM {SOURCE_TABLE}")
            row = c.fetchone()
            if row is None:
                row = (uuid.uuid4().hex,)
                c.execute(f"INSERT INTO {SOURCE_TABLE} VALUES (?)", row)
        return str(row[0])

    def index(self, knowledge_base_id: str) -> tantivy.Index:
        """The knowledge base's index: in memory while it is small, else its folder's."""
        for held in (self.open, self.memory):
            index = held.get(knowledge_base_id)
            if index is not None:
                held.move_to_end(knowledge_base_id)
                return index
        if self.root is not None and not self._small(knowledge_base_id):
            while len(self.open) >= OPEN_AT_MOST:
                self.close(next(iter(self.open)))
            index = self._folder(self.root / knowledge_base_id)
            self.open[knowledge_base_id] = index
        else:
            while len(self.memory) >= IN_MEMORY_AT_MOST:
                self.close(next(iter(self.memory)))
            index = tantivy.Index(K.SCHEMA)
            self.memory[knowledge_base_id] = index
        K.register(index)
        index.config_reader(reload_policy="Manual")
        return index

    def _folder(self, path: Path) -> tantivy.Index:
        path.mkdir(parents=True, exist_ok=True)
        try:
            return tantivy.Index(K.SCHEMA, path=os.fspath(path), reuse=True)
        except ValueError as e:
            # Another schema's index (an older kbes), or files too damaged to open: a
            # projection, built again.
            logger.warning(
                "rebuilding the keyword index in %s (another format, or damaged: %s)", path, e
            )
            shutil.rmtree(path)
            path.mkdir(parents=True)
            return tantivy.Index(K.SCHEMA, path=os.fspath(path), reuse=True)

    def _small(self, kb: str) -> bool:
        """Whether the knowledge base holds fewer than `in_memory_below` articles; a large one
        is remembered, so the count is paid only while it is small."""
        if kb in self.large or self.in_memory_below == 0:
            return False
        rows = self.database.fetch(
            "SELECT count(*) FROM (SELECT 1 FROM view_articles WHERE knowledge_base_id = ? "
            "LIMIT ?)",
            (kb, self.in_memory_below),
        )
        if rows[0][0] < self.in_memory_below:
            return True
        self.large.add(kb)
        return False

    def close(self, knowledge_base_id: str) -> None:
        """Let go of the knowledge base's index: a folder's thread and maps end once the last
        searcher a caller still holds is dropped; an index in memory is freed."""
        self.open.pop(knowledge_base_id, None)
        self.memory.pop(knowledge_base_id, None)
        self.searchers.pop(knowledge_base_id, None)

    def held(self) -> set[str]:
        """The knowledge bases whose index this process holds open (folder or memory)."""
        with self.lock:
            return {*self.open, *self.memory}

    def refresh(self, knowledge_base_ids: Iterable[str], head: int) -> None:
        """Bring each knowledge base's index this process holds to `head`, if it holds it (a
        server's background catch-up, kbes.store.keeping_up): its next search finds it there
        and commits nothing. A failing index is left to its next search to report."""
        for kb in knowledge_base_ids:

            def caught_up(kb: str = kb) -> None:
                with self.lock:
                    if kb in self.open or kb in self.memory:
                        self._caught_up(kb, head)

            try:
                self._safely(kb, caught_up)
            except (IndexUnavailable, Busy) as e:
                logger.info("the background catch-up left knowledge base %s: %s", kb, e)

    def changed_between(self, after: int, head: int) -> list[str]:
        """The knowledge bases whose articles changed after position `after` up to `head`."""
        rows = self.database.fetch(
            "SELECT DISTINCT knowledge_base_id FROM keyword_changes "
            "WHERE position > ? AND position <= ?",
            (after, head),
        )
        return [row[0] for row in rows]

    def search(self, knowledge_base_id: str, query: str, limit: int, head: int) -> list[K.Hit]:
        """The top hits once the knowledge base's index reflects the views at `head`, for the
        query's words (`DEFER_AT_MOST`)."""
        question = K.asked(query)

        def hits() -> list[K.Hit]:
            with self.lock:
                searcher = self._caught_up(knowledge_base_id, head, question.terms)
            return K.search(searcher, question, limit)

        return self._safely(knowledge_base_id, hits)

    def build(self, knowledge_base_ids: list[str], head: int) -> None:
        """Bring each knowledge base's folder to `head` now (after a rebuild, which sends every
        index to be built whole), rather than at its first search, and close it: a rebuild of
        thousands of knowledge bases holds one open at a time. An index that lives in memory is
        built by the process that searches it."""
        for kb in knowledge_base_ids:
            if self.root is None or self._small(kb):
                continue  # held in memory: built at its first search, in the process that asks

            def built(kb: str = kb) -> None:
                with self.lock:
                    self._caught_up(kb, head)
                    self.close(kb)

            self._safely(kb, built)

    def documents(self, knowledge_base_id: str, head: int) -> list[tuple[str, str, str, str]]:
        """Every document of the knowledge base's index at `head`: (article id, title, content,
        updated_at), by article id. For comparing two builds of the views."""

        def found() -> list[tuple[str, str, str, str]]:
            with self.lock:
                searcher = self._caught_up(knowledge_base_id, head)
            hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1)).hits
            docs = (searcher.doc(address) for _, address in hits)
            return sorted(
                (d[K.ARTICLE_ID][0], *K.stored(d))
                for d in docs
                if d[K.ARTICLE_ID] != [K.POSITION_KEY]
            )

        return self._safely(knowledge_base_id, found)

    def _safely(self, kb: str, run: Callable[[], T]) -> T:
        """`run()`, the knowledge base's index's failures made its own. A failure of its files
        is tried again on the index reopened (another process's commit can delete the files a
        reload was about to open), then on the index moved aside and built whole; what the
        machine cannot give now (a full disk, an unwritable folder, threads), or a failure of
        the index built again, is `IndexUnavailable`. A Rust panic is caught here too (a
        BaseException), so it never reaches the server."""
        reasons: list[str] = []
        discard = False
        for attempt in range(3):  # as it is, reopened, built again
            try:
                if discard:
                    with self.lock:
                        self._discard(kb)
                return run()
            except BaseException as e:
                failure = index_failure.classify(e)
                if failure is None:
                    raise
                reasons.append(failure.reason)
                with self.lock:
                    self.close(kb)
                if not failure.damaged or attempt == 2:
                    reason = "; then ".join(reasons)
                    logger.warning("the keyword index of knowledge base %s: %s", kb, reason)
                    raise IndexUnavailable(kb, reason) from e
                discard = attempt == 1
                logger.warning(
                    "the keyword index of knowledge base %s failed (%s); %s",
                    kb,
                    failure.reason,
                    "building it again" if discard else "reopening it",
                )
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _discard(self, kb: str) -> None:
        """Close the knowledge base's index and move its folder aside, then delete it: the next
        open builds it whole. Another process that has it open reads the new one at its next
        reload (the files it maps stay readable until it lets go)."""
        self.close(kb)
        if self.root is None:
            return
        path = self.root / kb
        aside = self.root / f".{kb}.discarded.{uuid.uuid4().hex}"
        try:
            path.rename(aside)
        except FileNotFoundError:
            return
        shutil.rmtree(aside, ignore_errors=True)

    def _position(self, searcher: tantivy.Searcher, source: str) -> int:
        """The position the searcher's commit reflects, once its mark matches the log's event
        there; 0 (to be built whole) for a commit that followed another log or is past this
        one's head."""
        position, mark = K.read_position(searcher, source)
        if position == 0 or self.log is None or (position, mark) in self.verified:
            return position
        if self._mark(position) != mark:
            if (position, mark) not in self.distrusted:
                self.distrusted.add((position, mark))
                logger.warning(
                    "a keyword index at position %d follows another log than this one "
                    "(a backup restored, or the log lost its tail); building it again",
                    position,
                )
            return 0
        self._verified(position, mark)
        return position

    def _verified(self, position: int, mark: str) -> None:
        if len(self.verified) >= TERMS_KEPT:
            self.verified.clear()
        self.verified.add((position, mark))

    def _mark(self, position: int) -> str:
        """Which event the log holds at `position`: a digest of its originator, version, topic
        and state; "none" past the head."""
        if self.log is None:
            return ""
        rows = self.log.select_notification_rows(position, 1, position)
        if not rows:
            return "none"
        _, originator_id, version, topic, state = rows[0]
        digest = hashlib.blake2b(f"{originator_id}/{version}/{topic}/".encode(), digest_size=8)
        digest.update(state)
        return digest.hexdigest()

    def _caught_up(self, kb: str, head: int, terms: list[str] | None = None) -> tantivy.Searcher:
        """The knowledge base's searcher at `head`; for a search of `terms`, the last commit's
        while no article changed since holds any of them, before or after (`DEFER_AT_MOST`)."""
        index = self.index(kb)
        source = self.source()
        held = self.searchers.get(kb)
        if held is not None and held[0] == source and held[1] >= head:
            return held[2]  # no commit anyone makes can be newer than what it already shows
        index.reload()
        searcher = index.searcher()
        position = self._position(searcher, source)
        deadline = time.monotonic() + self.wait_seconds
        if 0 < position < head:
            # None: the views were rebuilt meanwhile, and the index is to be built whole.
            changed = self._changed(kb, position, head, source)
            if changed is not None and not changed:
                self.searchers[kb] = (source, head, searcher)
                return searcher
            if (
                terms
                and changed is not None
                and len(changed) <= DEFER_AT_MOST
                and not self._touched(searcher, source, changed, terms)
            ):
                return searcher
        grew = False
        while position < head:
            with self._writer(index, bulk=position == 0) as writer:
                if writer is not None:
                    index.reload()
                    searcher = index.searcher()
                    source = self.source()
                    position = self._position(searcher, source)
                    if position < head:
                        kept = K.positions_held(searcher)
                        purge = kept >= K.positions_allowed(searcher.num_docs - kept)
                        self._apply(writer, kb, position, source, head, purge)
                        grew = kb in self.memory and self.root is not None
            writer = None  # the last reference: dropping it releases tantivy's lock
            index.reload()
            searcher = index.searcher()
            source = self.source()  # a rebuild may have switched the views in meanwhile
            position = self._position(searcher, source)
            if position >= head:
                self.searchers[kb] = (source, position, searcher)
                break
            if time.monotonic() > deadline:
                raise Busy(
                    f"the keyword index of knowledge base {kb} stayed at position {position}, "
                    f"behind {head}, for {self.wait_seconds:g} s while another process held "
                    "its writer; retry, or stop the process that holds it"
                )
            time.sleep(POLL_SECONDS)
        if grew and not self._small(kb):
            self.close(kb)  # its next search moves it to its folder, built whole there
        else:
            self.searchers[kb] = (source, position, searcher)
        return searcher

    def _changed(self, kb: str, position: int, head: int, source: str) -> list[str] | None:
        """The articles changed after `position` up to `head`; one more than `DEFER_AT_MOST`
        at most. None if the views are no longer `source`: read in one snapshot with the
        changes, since a rebuild that switches its views in forgets them (issue 35, item 6)."""
        with self.database.read() as c:
            c.execute(f"SELECT id FROM {SOURCE_TABLE}")
            row = c.fetchone()
            if row is None or row[0] != source:
                return None
            c.execute(
                "SELECT DISTINCT article_id FROM keyword_changes WHERE knowledge_base_id = ? "
                "AND position > ? AND position <= ? LIMIT ?",
                (kb, position, head, DEFER_AT_MOST + 1),
            )
            return [row[0] for row in c.fetchall()]

    def _touched(
        self, searcher: tantivy.Searcher, source: str, changed: list[str], terms: list[str]
    ) -> bool:
        """Whether any term is in a changed article's document, as committed or as it now is."""
        if K.holds_any(searcher, changed, terms):
            return True
        wanted = set(terms)
        marks = ", ".join("?" * len(changed))
        rows = self.database.fetch(
            f"SELECT article_id, version FROM view_articles WHERE article_id IN ({marks}) "
            "AND status = 'published'",
            changed,
        )
        for article_id, version in rows:
            key = (source, article_id, version)
            held = self.terms.get(key)
            if held is None:
                found = self.database.fetch(
                    "SELECT title, content FROM view_articles WHERE article_id = ? AND version = ?",
                    (article_id, version),
                )
                if not found:
                    return True  # changed again since: let the catch-up decide
                if len(self.terms) >= TERMS_KEPT:
                    self.terms.clear()
                held = self.terms[key] = K.document_terms(*found[0])
            if not wanted.isdisjoint(held):
                return True
        return False

    @contextmanager
    def _writer(
        self, index: tantivy.Index, *, bulk: bool = False
    ) -> Iterator[tantivy.IndexWriter | None]:
        """The index's writer, or None while another process holds it. Opened for one commit
        and released only once its merges end, in memory too: BM25 counts the documents of
        segments not yet merged away, so a merge left running would make the ranking depend on
        when it finished, and `kbes sim` promises the same figures on every run. For the same
        reason an index in memory is built whole on one thread: how the threads split the
        documents into segments moves which merges purge the deleted ones, and when. On disk
        it is built on every core."""
        threads = 0 if bulk and any(held is index for held in self.open.values()) else 1
        try:
            writer = index.writer(BULK_HEAP if bulk else WRITER_HEAP, threads)
        except ValueError as e:
            if "LockBusy" not in str(e):
                raise
            yield None
            return
        try:
            yield writer
        except BaseException:
            writer.rollback()
            raise
        finally:
            # Consumes the writer, which releases tantivy's lock there and then: a reference
            # kept by a traceback would otherwise hold it until the garbage collector ran.
            writer.wait_merging_threads()

    def _apply(
        self,
        writer: tantivy.IndexWriter,
        kb: str,
        position: int,
        source: str,
        wanted: int,
        purge: bool,
    ) -> None:
        """Bring the index from `position` to the views' position (at least `wanted`, which
        the caller's views reached), in one commit, deleting the position documents held if
        `purge` (`K.POSITIONS_KEPT`). Built whole, the rows are read a chunk at a time inside
        one read transaction, so memory holds a chunk, not the knowledge base."""
        with self.database.read() as c:
            head = max(self.database.position(c), wanted)
            c.execute(f"SELECT id FROM {SOURCE_TABLE}")
            row = c.fetchone()
            if row is not None and row[0] != source:
                # A rebuild switched its views in since the caller read their id: what changed
                # since `position` is forgotten, so the index is built whole from them.
                source, position = row[0], 0
            if position == 0:
                writer.delete_all_documents()
                # The keys first (the knowledge base's index), then the rows a chunk at a time.
                c.execute("SELECT seq FROM view_articles WHERE knowledge_base_id = ?", (kb,))
                keys = sorted(row[0] for row in c.fetchall())
                for at in range(0, len(keys), BUILD_CHUNK):
                    chunk = keys[at : at + BUILD_CHUNK]
                    c.execute(
                        f"SELECT {ROW} FROM view_articles WHERE seq IN "
                        f"({', '.join('?' * len(chunk))}) AND status = 'published' ORDER BY seq",
                        chunk,
                    )
                    for article_id, title, content, _, updated_at, seq in c.fetchall():
                        writer.add_document(K.document(article_id, title, content, updated_at, seq))
            else:
                c.execute(
                    f"SELECT {ROW} FROM view_articles WHERE article_id IN ("
                    "SELECT DISTINCT article_id FROM keyword_changes "
                    "WHERE knowledge_base_id = ? AND position > ? AND position <= ?)",
                    (kb, position, head),
                )
                for article_id, title, content, status, updated_at, seq in c.fetchall():
                    writer.delete_documents_by_term(K.ARTICLE_ID, article_id)
                    if status == "published":
                        writer.add_document(K.document(article_id, title, content, updated_at, seq))
        if purge:
            writer.delete_documents_by_term(K.ARTICLE_ID, K.POSITION_KEY)
        at = max(head, 1)
        mark = self._mark(at)
        writer.add_document(K.position_document(at, source, mark))
        writer.commit()
        self._verified(at, mark)


__all__ = ["CHANGES", "CHANGES_BY_POSITION", "KeywordIndexes", "forget", "record_changes"]
