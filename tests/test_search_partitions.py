"""The search index keeps each knowledge base in its own rowid range: a search reads its own
knowledge base's rows only, ranks exactly as one plain FTS5 table did, and an index written
before the ranges (rowid = article seq) is rebuilt when the store opens."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from views_dump import dump

from kbes import KnowledgeBaseStore, open_store
from kbes.projections import search
from kbes.sims.bench.dataset import Corpus

OLD_SEARCH_SQL = (
    "SELECT a.article_id, a.title, a.updated_at, "
    "snippet(old_index, 1, '', '', '…', 24) AS snippet "
    "FROM old_index JOIN view_articles a ON a.seq = old_index.rowid "
    "WHERE old_index MATCH ? AND a.knowledge_base_id = ? "
    "ORDER BY bm25(old_index, 10.0, 1.0), a.seq LIMIT ?"
)
"""The search before the ranges: one table keyed by seq, filtered after MATCH."""


def fill(store: KnowledgeBaseStore, corpus: Corpus, n: int) -> tuple[str, list[str]]:
    kb = str(store.create_knowledge_base(f"kb {n}"))
    drafts = corpus.drafts(n)
    store.add_articles(kb, drafts, publish=True)
    return kb, [title for title, _ in drafts]


def add_old_index(db: sqlite3.Connection) -> None:
    """The index as it was built before the ranges, beside the views, as `old_index`."""
    db.execute(search.SCHEMA.replace("search_index", "old_index"))
    db.execute(
        "INSERT INTO old_index (rowid, title, content) "
        "SELECT seq, title, content FROM view_articles WHERE status = 'published'"
    )


def test_ranking_is_the_single_tables(tmp_path: Path) -> None:
    """Results, order and snippets equal the old query's over one table, with two knowledge
    bases interleaved (bm25's statistics still count the whole table)."""
    corpus, rng = Corpus(seed=3), random.Random(3)
    store = open_store(tmp_path / "kb.sqlite", synchronous="OFF")
    try:
        a, a_titles = fill(store, corpus, 300)
        b, b_titles = fill(store, corpus, 300)
        for _ in range(0, 300, 7):  # interleave later writes of both
            store.add_articles(b, corpus.drafts(1), publish=True)
            store.add_articles(a, corpus.drafts(1), publish=True)
        store.catch_up()
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "kb.sqlite")
    add_old_index(db)
    checked = 0
    for kb, titles in ((a, a_titles), (b, b_titles)):
        for _ in range(60):
            expression = search.match_expression(corpus.query(rng.choice(titles)))
            new = db.execute(search.SEARCH_SQL, (expression, kb, 10)).fetchall()
            old = db.execute(OLD_SEARCH_SQL, (expression, kb, 10)).fetchall()
            assert new == old
            checked += len(new)
    assert checked > 400


def steps(db: sqlite3.Connection, kb: str, expression: str) -> tuple[int, list[tuple[str, ...]]]:
    """The virtual machine instructions a search of `kb` runs, and its results."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    db.set_progress_handler(tick, 1)
    rows = db.execute(search.SEARCH_SQL, (expression, kb, 10)).fetchall()
    db.set_progress_handler(None, 1)
    return count, rows


def test_a_search_reads_its_knowledge_base_only(tmp_path: Path) -> None:
    """With 2,000 articles of the same words in another knowledge base, a search runs fewer
    than one more instruction per such article: their rows never reach the join, bm25 or
    snippet() (the old query ran about five each). What grows is bm25's statistics pass, which
    reads the words' postings pages of the whole table, as before."""
    words = "reset password invoice"
    counts = []
    others = 2000
    for n in (0, others):
        store = open_store(tmp_path / f"others{n}.sqlite", synchronous="OFF")
        try:
            a = str(store.create_knowledge_base("A"))
            b = str(store.create_knowledge_base("B"))
            for i in range(20):
                store.add_article(a, f"Reset {i}", f"{words} number {i}", publish=True)
                if n:
                    store.add_articles(
                        b, [(f"Password {j}", words) for j in range(n // 20)], publish=True
                    )
            store.catch_up()
        finally:
            store.close()
        db = sqlite3.connect(tmp_path / f"others{n}.sqlite")
        count, rows = steps(db, a, search.match_expression(words) or "")
        assert [row[1] for row in rows] == [f"Reset {i}" for i in range(10)]
        counts.append(count)
    assert counts[1] - counts[0] < others


def test_an_index_from_before_the_ranges_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    corpus = Corpus(seed=5)
    store = open_store(path, synchronous="OFF")
    try:
        a, titles = fill(store, corpus, 50)
        fill(store, corpus, 50)
        store.catch_up()
        before = dump(store.views)
        query = corpus.query(titles[7])
        hits = store.search(a, query, 10)
    finally:
        store.close()
    db = sqlite3.connect(path)
    with db:  # the index as the previous version left it
        db.execute("DROP TABLE search_index")
        db.execute("DROP TABLE search_partitions")
        add_old_index(db)
        db.execute("ALTER TABLE old_index RENAME TO search_index")
    db.close()
    store = open_store(path, synchronous="OFF")
    try:
        assert dump(store.views) == before
        assert store.search(a, query, 10) == hits
        with store.views.read() as c:
            assert not search.outdated(c)
            c.execute("SELECT MIN(rowid) FROM search_index")
            assert c.fetchone()[0] >= 1 << search.SEQ_BITS
    finally:
        store.close()
