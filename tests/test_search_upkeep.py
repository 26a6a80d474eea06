"""The search index's upkeep (projections/search.py): an FTS5 `optimize` once the documents
written since the last one add up to the index's size, in the catch-up's own transaction, and
one at the end of a replay; after 200 optimizes the next upkeep rebuilds the index first (older
SQLite adds levels at each optimize and calls the index corrupt past 2,000)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kbes import KnowledgeBaseStore, open_store
from kbes.projections import search
from kbes.wire import SearchRequest


def upkeep_row(store: KnowledgeBaseStore) -> tuple[int, int, int]:
    with store.views.read() as c:
        c.execute("SELECT written, due, optimizes FROM view_search_upkeep")
        row = c.fetchone()
        return (row[0], row[1], row[2])


def integrity_check(path: Path) -> None:
    """FTS5's own check of the index against its documents; raises if they disagree."""
    db = sqlite3.connect(path)
    try:
        db.execute("INSERT INTO search_index(search_index, rank) VALUES ('integrity-check', 1)")
    finally:
        db.close()


def hits(store: KnowledgeBaseStore, kb: str, query: str) -> list[str]:
    result = store.search(SearchRequest(knowledge_base_id=kb, query=query, limit=20))
    return [hit.article_id for hit in result.hits]


def test_saves_trigger_an_optimize_once_they_add_up_to_the_index(
    store: KnowledgeBaseStore, kb: str, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "OPTIMIZE_MIN_WRITES", 10)
    articles = [
        str(store.add_article(kb, f"Printer {i}", f"Tray {i} jams.", publish=True))
        for i in range(4)
    ]
    store.catch_up()  # 4 documents indexed; 10 are due before the first optimize
    assert upkeep_row(store) == (4, 10, 0)
    for n in range(6):  # one catch-up per save, as tool calls between saves would make
        store.save_article(kb, articles[n % 4], content=f"Tray {n % 4} jams again, round {n}.")
        store.catch_up()
    written, due, optimizes = upkeep_row(store)
    assert (written, optimizes) == (0, 1)  # the tenth write ran it and reset the count
    assert due == 10  # max(OPTIMIZE_MIN_WRITES, 4 documents in the index)
    store.save_article(kb, articles[0], content="Tray 0 is fixed: use the zebra lever.")
    store.catch_up()
    assert upkeep_row(store) == (1, 10, 1)
    assert hits(store, kb, "zebra") == [articles[0]]
    assert set(hits(store, kb, "jams")) == set(articles[1:])
    integrity_check(db_path)


def test_the_index_is_rebuilt_after_so_many_optimizes(
    store: KnowledgeBaseStore, kb: str, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "OPTIMIZE_MIN_WRITES", 1)
    monkeypatch.setattr(search, "REBUILD_AFTER_OPTIMIZES", 3)
    article = str(store.add_article(kb, "VPN", "Connect on port 443.", publish=True))
    store.add_article(kb, "Wi-Fi", "Join Corp.")  # a draft: not in the index
    store.catch_up()  # the one document written was due: optimize 1
    rebuilds = []
    original = search.optimize

    def spy(c: object, *, rebuild: bool = False) -> None:
        rebuilds.append(rebuild)
        original(c, rebuild=rebuild)

    monkeypatch.setattr(search, "optimize", spy)
    for n in range(7):
        store.save_article(kb, article, content=f"Connect on port {n}.")
        store.catch_up()
    # Three optimizes, then a rebuild and optimize (counted as the first of the next three).
    assert rebuilds == [False, False, True, False, False, True, False]
    assert upkeep_row(store) == (0, 1, 2)  # due: max(OPTIMIZE_MIN_WRITES, 1 document)
    assert hits(store, kb, "port") == [article] and hits(store, kb, "corp") == []
    assert hits(store, kb, "443") == []
    integrity_check(db_path)


def test_a_replay_ends_with_an_optimized_index(
    store: KnowledgeBaseStore, kb: str, db_path: Path
) -> None:
    for i in range(30):
        store.add_article(kb, f"Article {i}", f"Text number {i}.", publish=True)
    store.catch_up()
    before = store.views.dump()
    store.rebuild()
    assert store.views.dump() == before
    assert upkeep_row(store) == (0, search.OPTIMIZE_MIN_WRITES, 1)
    integrity_check(db_path)


def test_a_failed_optimize_rolls_back_the_whole_batch(
    store: KnowledgeBaseStore, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The optimize runs in the catch-up's transaction: if it fails, neither the batch's rows
    nor its tracking position are written, and the next catch-up does it all again."""
    article = str(store.add_article(kb, "VPN", "Connect on port 443.", publish=True))
    store.catch_up()
    position, before = store.views.position, store.views.dump()
    with store.views.write() as c:
        c.execute("UPDATE view_search_upkeep SET written = due - 1")
    assert upkeep_row(store)[0] == search.OPTIMIZE_MIN_WRITES - 1

    def broken(c: object, *, rebuild: bool = False) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(search, "optimize", broken)
    store.save_article(kb, article, content="Connect on port 8443.")
    with pytest.raises(sqlite3.OperationalError):
        store.catch_up()
    assert store.views.max_tracking_id("kbes") == position
    assert store.views.dump() == before
    monkeypatch.undo()
    store.catch_up()
    assert hits(store, kb, "8443") == [article]
    assert upkeep_row(store)[0] == 0


def test_views_made_before_the_upkeep_table_keep_working(db_path: Path) -> None:
    store = open_store(db_path)
    kb = str(store.create_knowledge_base("Support"))
    article = str(store.add_article(kb, "VPN", "Connect on port 443.", publish=True))
    store.catch_up()
    with store.views.write() as c:
        c.execute("DROP TABLE view_search_upkeep")  # as a store from before this change
    store.close()
    store = open_store(db_path)
    try:
        store.save_article(kb, article, content="Connect on port 8443.")
        assert hits(store, kb, "8443") == [article]
        assert upkeep_row(store) == (1, search.OPTIMIZE_MIN_WRITES, 0)
    finally:
        store.close()
