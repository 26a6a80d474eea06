"""Crashes lose nothing: real processes, killed with SIGKILL while writing.

Writers killed at a random moment keep every edit they acknowledged, and the one in flight is
either wholly in the log or wholly absent (its retry, with its key, then writes it exactly once).
A process killed inside a write transaction (an edit, an import, a views batch, the search
index's rebuild) leaves nothing of it, holds no lock, and the views the next process builds
equal a replay of the log. On SQLite and on PostgreSQL (whose client dies mid-transaction)."""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
import pytest
from crash_worker import HANGING, edit_arguments
from mcp_harness import KBES
from views_dump import dump

from kbes import KnowledgeBaseStore, call_tool, format_timestamp, open_store
from kbes.domain.article import Article
from kbes.projections.fold import REPLAY_CHUNK
from kbes.projections.tracking import SEARCH_SUFFIX
from kbes.store.event_log import EventLog

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("crash_worker.py")
WRITERS = 3


class Worker:
    """A crash_worker process, its JSON lines read by a thread so a test can wait with a
    timeout."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=None if env is None else {**os.environ, **env},
        )
        LIVE.append(self)
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def next(self, timeout: float = 60) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        if line is None:
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"the worker ended early ({self.process.wait()}): {stderr}")
        self.seen.append(line)
        return line

    def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        while not predicate(self.next(timeout)):
            pass

    def kill(self) -> list[dict[str, Any]]:
        """SIGKILL; then every line it printed before dying."""
        self.process.send_signal(signal.SIGKILL)
        assert self.process.wait(timeout=30) == -signal.SIGKILL
        while (line := self.lines.get(timeout=30)) is not None:
            self.seen.append(line)
        return [line for line in self.seen if "i" in line]


LIVE: list[Worker] = []


@pytest.fixture(autouse=True)
def no_worker_outlives_its_test() -> Iterator[None]:
    """A test that fails before its kill must not leave a worker editing, or hanging, on."""
    yield
    while LIVE:
        process = LIVE.pop().process
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def worker_views(db: str, tmp_path: Path, name: str) -> str:
    """A PostgreSQL log needs one local views file per process; SQLite keeps views in the db."""
    return str(tmp_path / f"views-{name}.sqlite") if db.startswith("postgresql") else ""


def reopen(db: str, tmp_path: Path) -> KnowledgeBaseStore:
    return open_store(db, views=worker_views(db, tmp_path, "check") or None)


def integrity(db: str) -> None:
    if not db.startswith("postgresql"):
        with sqlite3.connect(db) as c:
            assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def saves(store: KnowledgeBaseStore, article: str) -> list[str]:
    """The `updated_at` of each `Saved` event of the article, straight from the log."""
    log = store.log
    events = [log.mapper.to_domain_event(e) for e in log.recorder.select_events(UUID(article))]
    return [format_timestamp(e.timestamp) for e in events if isinstance(e, Article.Saved)]


def version(store: KnowledgeBaseStore, kb: str, article: str) -> str:
    read = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
    )
    return read.updated_at


def edit(store: KnowledgeBaseStore, arguments: dict[str, Any]) -> dict[str, Any]:
    return msgspec.to_builtins(call_tool(store, "edit_knowledge_article", arguments))


def views_equal_a_replay(store: KnowledgeBaseStore) -> None:
    store.catch_up()
    caught_up = dump(store.views)
    store.rebuild()
    assert dump(store.views) == caught_up


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "crash.sqlite")
    return request.getfixturevalue("pg").create_database()


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    from pg_server import running_pg

    yield from running_pg()


def setup_articles(db: str, tmp_path: Path, n: int) -> tuple[str, list[str], list[str]]:
    """A knowledge base with n published articles; their ids and versions."""
    store = open_store(db, views=worker_views(db, tmp_path, "setup") or None)
    try:
        kb = str(store.create_knowledge_base("Crash"))
        ids = [
            str(a)
            for a in store.add_articles(kb, [(f"A{i}", "v0") for i in range(n)], publish=True)
        ]
        return kb, ids, [version(store, kb, a) for a in ids]
    finally:
        store.close()


def test_writers_killed_at_random_keep_every_acknowledged_edit(db: str, tmp_path: Path) -> None:
    kb, ids, versions = setup_articles(db, tmp_path, WRITERS)
    workers = [
        Worker("edits", db, worker_views(db, tmp_path, str(n)), kb, article)
        for n, article in enumerate(ids)
    ]
    for w in workers:
        w.wait_for(lambda line: line.get("i", -1) >= 10)  # each well into its loop
    seed = random.randrange(2**32)
    pause = random.Random(seed).uniform(0, 0.05)
    print(f"killing after a further {pause * 1000:.1f} ms (seed {seed})")  # shown on failure
    threading.Event().wait(pause)
    acked = [w.kill() for w in workers]

    integrity(db)
    store = reopen(db, tmp_path)
    try:
        for article, first_version, acks in zip(ids, versions, acked, strict=True):
            logged = saves(store, article)
            n = len(acks)
            assert [a["i"] for a in acks] == list(range(n))
            assert logged[:n] == [a["updated_at"] for a in acks]  # every acknowledged edit
            assert len(logged) in (n, n + 1)  # and at most the one in flight, whole
            # The edit in flight, sent again with its key: written once, whichever way it fell.
            in_flight = edit_arguments(
                kb, article, n, acks[-1]["updated_at"] if acks else first_version
            )
            retried = edit(store, in_flight)
            assert retried["replay"] is (len(logged) == n + 1)
            if retried["replay"]:
                assert retried["updated_at"] == logged[n]
            assert len(saves(store, article)) == n + 1
            # An acknowledged edit's key still replays its first result after the crash.
            last = acks[-1]
            again = edit(store, edit_arguments(kb, article, last["i"], last["expected_version"]))
            assert (again["replay"], again["updated_at"]) == (True, last["updated_at"])
        views_equal_a_replay(store)
    finally:
        store.close()


def test_an_edit_killed_inside_its_transaction_leaves_nothing(db: str, tmp_path: Path) -> None:
    kb, [article], _ = setup_articles(db, tmp_path, 1)
    store = reopen(db, tmp_path)
    head = store.head()
    store.close()
    worker = Worker("edits", db, worker_views(db, tmp_path, "w"), kb, article, "--hang-at", "3")
    worker.wait_for(lambda line: line.get("state") == HANGING)
    assert worker.seen[-1]["events"] == 2  # the Saved event and its receipt, one transaction
    acks = worker.kill()
    assert [a["i"] for a in acks] == [0, 1, 2]

    integrity(db)
    store = reopen(db, tmp_path)
    try:
        assert saves(store, article) == [a["updated_at"] for a in acks]
        assert store.head() == head + 2 * 3  # a Saved and a receipt each
        # The killed process held the write lock (SQLite) or uncommitted rows (PostgreSQL): the
        # same edit, key and all, is not a replay but the first write, and it is not blocked.
        retried = edit(store, edit_arguments(kb, article, 3, acks[-1]["updated_at"]))
        assert retried["replay"] is False
        assert saves(store, article)[-1] == retried["updated_at"]
        assert version(store, kb, article) == retried["updated_at"]
        views_equal_a_replay(store)
    finally:
        store.close()


def test_an_import_killed_inside_its_transaction_writes_nothing(db: str, tmp_path: Path) -> None:
    kb, _, _ = setup_articles(db, tmp_path, 0)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(40):
        (folder / f"page-{i}.md").write_text(f"# Page {i}\n\nText of page {i}.\n", encoding="utf-8")
    store = reopen(db, tmp_path)
    head = store.head()
    store.close()
    args = ["import", str(folder), "--kb", kb, "--publish", "--db", db]
    # The `kbes` processes' views (a PostgreSQL log's are a local file; SQLite's are in the db).
    env = {"KBES_VIEWS": worker_views(db, tmp_path, "cli")}
    worker = Worker("kbes", "--hang-at", "0", "--", *args, env=env)
    worker.wait_for(lambda line: line.get("state") == HANGING)
    # Every Drafted and Published, and the folder's record (Started, Mapped): one transaction.
    assert worker.seen[-1]["events"] == 82
    worker.kill()

    integrity(db)
    store = reopen(db, tmp_path)
    try:
        assert store.head() == head
        store.catch_up()
        assert store.views.articles(kb) == []
    finally:
        store.close()
    again = subprocess.run(
        [KBES, *args], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    assert again.stdout.splitlines()[-1] == "40 added, 0 saved, 40 published, 0 unchanged"


@pytest.mark.parametrize("where", ["building", "switching"])
def test_a_rebuild_killed_part_way_leaves_the_views_as_they_were(
    where: str, tmp_path: Path
) -> None:
    """Long enough a log (over REPLAY_CHUNK events) that the rebuild takes the replay path: big
    batches, and the search index built whole at the end. A rebuild builds the new views aside
    and switches them in with one transaction, so a kill anywhere in it leaves the old views
    whole, as readers saw them throughout."""
    db = str(tmp_path / "rebuild.sqlite")
    store = open_store(db, synchronous="OFF")
    kb = str(store.create_knowledge_base("Rebuild"))
    ids = store.add_articles(kb, [(f"T{i}", f"body {i}") for i in range(2_000)], publish=True)
    for i, article in enumerate(ids[:1_500]):
        store.save_article(
            kb, article, content=f"body {i} saved", title=f"T{i} v2" if i % 7 == 0 else None
        )
    store.unpublish_article(kb, ids[0])
    store.catch_up()
    expected = dump(store.views)
    head = store.head()
    assert head > REPLAY_CHUNK
    store.close()

    worker = Worker("kbes", "--hang-in-views", where, "--", "rebuild", "--db", db)
    worker.wait_for(lambda line: line.get("state") == HANGING)
    worker.kill()

    integrity(db)
    # Killed while building the new views aside, or inside the switch with the old views
    # dropped: the views and their positions are the old ones.
    with sqlite3.connect(db) as c:
        positions = dict(
            c.execute("SELECT application_name, max(notification_id) FROM tracking GROUP BY 1")
        )
    name = EventLog.name
    assert (positions[name], positions[name + SEARCH_SUFFIX]) == (head, head)
    store = open_store(db)
    try:
        store.catch_up()
        assert dump(store.views) == expected
        hits = call_tool(
            store, "search_knowledge_base", {"knowledge_base_id": kb, "query": "T7 v2"}
        )
        assert hits.hits[0].article_id == str(ids[7])
    finally:
        store.close()
    # The CLI agrees: a rebuild from here reports the whole log.
    done = subprocess.run(
        [KBES, "rebuild", "--db", db],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.stdout.startswith("rebuilt views from ")
