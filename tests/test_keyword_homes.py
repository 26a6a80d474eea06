"""Where a keyword index lives (issue 31): a small knowledge base's in the process's memory, a
large one's in its folder, and a process holds a bounded number of each, so its threads,
memory maps and memory do not grow with the knowledge bases it has searched. A knowledge base
that grows moves to its folder with every search answered right on the way. A server keeps
its open indexes caught up in the background (kbes.store.keeping_up), so a search after
another process's save finds it with nothing left to commit."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kbes import KnowledgeBaseStore, open_store
from kbes.projections import keyword_index as KI
from kbes.store.keeping_up import KeepingUp


def ids(store: KnowledgeBaseStore, kb: str, query: str) -> set[str]:
    return {h.article_id for h in store.search(kb, query, 50)}


def folder(db_path: Path, kb: str) -> Path:
    return Path(f"{db_path}.keyword") / kb


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_a_small_knowledge_base_is_searched_from_memory_without_a_folder(
    store: KnowledgeBaseStore, kb: str, db_path: Path
) -> None:
    article = str(store.add_article(kb, "Care", "Feed it alphaword.", publish=True))
    assert ids(store, kb, "alphaword") == {article}
    assert kb in store.views.keyword.memory and kb not in store.views.keyword.open
    assert not folder(db_path, kb).exists()
    store.save_article(kb, article, content="Feed it bravoword.")
    assert ids(store, kb, "bravoword") == {article}
    assert ids(store, kb, "alphaword") == set()
    store.unpublish_article(kb, article)
    assert ids(store, kb, "bravoword") == set()


def test_a_growing_knowledge_base_moves_to_its_folder_answering_right(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBES_KEYWORD_FOLDER_FROM", "5")
    store = open_store(db_path)
    try:
        kb = str(store.create_knowledge_base("Growing"))
        published: set[str] = set()
        gone = str(store.add_article(kb, "Gone", "sharedword goneword", publish=True))
        store.unpublish_article(kb, gone)
        for n in range(8):
            article = str(store.add_article(kb, f"Note {n}", f"sharedword note{n}", publish=True))
            published.add(article)
            # Every search on the way, in memory or in the folder, answers right.
            assert ids(store, kb, "sharedword") == published, n
            assert ids(store, kb, "goneword") == set()
        assert kb in store.views.keyword.open and kb not in store.views.keyword.memory
        assert (folder(db_path, kb) / "meta.json").exists()
    finally:
        store.close()
    reopened = open_store(db_path)
    try:
        assert ids(reopened, kb, "sharedword") == published
        assert ids(reopened, kb, "goneword") == set()
    finally:
        reopened.close()


def test_a_process_holds_a_bounded_number_of_indexes(
    store: KnowledgeBaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(KI, "IN_MEMORY_AT_MOST", 4)
    kbs = [str(store.create_knowledge_base(f"Team {n}")) for n in range(12)]
    articles = {
        kb: str(store.add_article(kb, "Care", f"word{n}", publish=True)) for n, kb in enumerate(kbs)
    }
    for _ in range(2):  # the second round finds most of them let go, and builds them again
        for n, kb in enumerate(kbs):
            assert ids(store, kb, f"word{n}") == {articles[kb]}
            assert ids(store, kb, f"word{(n + 1) % 12}") == set()  # another team's word
            assert len(store.views.keyword.memory) <= 4


def test_folders_held_open_are_bounded_and_their_threads_end(
    store: KnowledgeBaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.views.keyword, "in_memory_below", 0)  # every index in a folder
    monkeypatch.setattr(KI, "OPEN_AT_MOST", 3)
    kbs = [str(store.create_knowledge_base(f"Team {n}")) for n in range(10)]
    for n, kb in enumerate(kbs):
        store.add_article(kb, "Care", f"word{n}", publish=True)
    ids(store, kbs[0], "word0")
    before = threads()
    for n, kb in enumerate(kbs):
        assert len(ids(store, kb, f"word{n}")) == 1
        assert len(store.views.keyword.open) <= 3
    # A closed folder's watcher thread ends within a second or so of its last searcher.
    deadline = time.monotonic() + 10
    while threads() > before + 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert threads() <= before + 3


def test_the_background_catch_up_leaves_a_search_nothing_to_do(db_path: Path) -> None:
    server = open_store(db_path)
    other = open_store(db_path)
    try:
        kb = str(other.create_knowledge_base("Support"))
        first = str(other.add_article(kb, "Care", "Feed it alphaword.", publish=True))
        assert ids(server, kb, "alphaword") == {first}  # the server holds the index now
        keeping_up = server.keep_up_in_background()
        second = str(other.add_article(kb, "More", "Feed it bravoword.", publish=True))
        head = other.head()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            held = server.views.keyword.searchers.get(kb)
            if server.views.position >= head and held is not None and held[1] >= head:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the background catch-up never brought the index to the head")
        effort = keeping_up.effort()
        assert effort.events >= 2 and effort.catch_ups >= 1 and effort.cpu_seconds > 0
        assert ids(server, kb, "bravoword") == {second}
        other.unpublish_article(kb, first)
        assert ids(server, kb, "alphaword") == set()  # read-after-write, as before
    finally:
        other.close()
        server.close()
    assert server.keeping_up is None and not keeping_up.thread.is_alive()


def database_files_open(db_path: Path) -> int:
    """This process's open files on the database (the file and its WAL, per connection)."""
    wanted = {str(db_path), f"{db_path}-wal"}
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") in wanted
        except OSError:
            continue  # closed meanwhile
    return count


def test_the_background_looks_at_the_head_take_no_reader_from_the_searches(
    db_path: Path,
) -> None:
    """Its looks run on a connection of its own (the database file and its WAL): however they
    fall among the searches' reads, the server opens no reader more for them (bench row 14's
    open files)."""
    writer = open_store(db_path)
    kbs = [str(writer.create_knowledge_base(f"team {n}")) for n in range(20)]
    for n, kb in enumerate(kbs):
        writer.add_article(kb, "Care", f"word{n}", publish=True)
    writer.close()
    server = open_store(db_path)
    try:
        assert len(ids(server, kbs[0], "word0")) == 1
        before = database_files_open(db_path)
        keeping_up = KeepingUp(server.queries, server.views, interval=0.0001).start()
        try:
            deadline = time.monotonic() + 10
            while database_files_open(db_path) != before + 2:
                assert time.monotonic() < deadline, "the thread opened no connection of its own"
                time.sleep(0.01)
            for _ in range(25):
                for n, kb in enumerate(kbs):
                    assert len(ids(server, kb, f"word{n}")) == 1
            assert database_files_open(db_path) == before + 2
        finally:
            keeping_up.stop()
    finally:
        server.close()
