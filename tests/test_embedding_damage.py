"""A damaged row of the embedding cache is checked as a keyword index is (issue 35, item 13):
a vector that cannot be an embedder's (not DIMENSIONS finite float32s of unit length) is never
searched, its text is embedded again at the next hybrid search, and `kbes rebuild` deletes
every such row. Before: the damaged vector reordered hybrid results, and survived the
rebuild (which keeps the cache, keyed by content hash, whatever the vector holds)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np

from kbes import KnowledgeBaseStore, open_store
from kbes.projections import vectors
from kbes.projections.embedder import DIMENSIONS
from kbes.sims.bench.hybrid_speed import SyntheticEmbedder


def hybrid(db: Path) -> KnowledgeBaseStore:
    return open_store(db, search="hybrid", embedder=SyntheticEmbedder())


def ranked(db: Path, kb: str, query: str) -> list[str]:
    store = hybrid(db)
    try:
        return [hit.article_id for hit in store.search(kb, query, 10)]
    finally:
        store.close()


def damage(db: Path, article_id: str) -> None:
    """The article's cached vector overwritten with another, far from unit length, that points
    at every query (all ones)."""
    with closing(sqlite3.connect(db)) as c, c:
        c.execute(
            "UPDATE embeddings SET vector = ? WHERE content_hash = "
            "(SELECT content_hash FROM vector_articles WHERE article_id = ?)",
            (np.ones(DIMENSIONS, dtype=np.float32).tobytes(), article_id),
        )


def test_a_damaged_cached_vector_is_never_searched_and_is_embedded_again(db_path: Path) -> None:
    store = hybrid(db_path)
    kb = str(store.create_knowledge_base("Notes"))
    ids = [
        str(store.add_article(kb, f"Note {n}", f"Body {n} about topic {n % 7}.", publish=True))
        for n in range(30)
    ]
    store.embed_pending()
    store.close()
    before = ranked(db_path, kb, "topic 3")
    assert ranked(db_path, kb, "topic 3") == before
    victim = next(a for a in ids if a not in before)  # not among the hits
    damage(db_path, victim)
    assert ranked(db_path, kb, "topic 3") == before
    with closing(sqlite3.connect(db_path)) as c:
        rows = c.execute("SELECT vector FROM embeddings").fetchall()
    assert all(vectors.sound(row[0]) for row in rows)  # embedded again by that search


def test_rebuild_deletes_damaged_cached_vectors(db_path: Path) -> None:
    store = hybrid(db_path)
    kb = str(store.create_knowledge_base("Notes"))
    article = str(store.add_article(kb, "Note", "Body about topic.", publish=True))
    store.embed_pending()
    store.close()
    damage(db_path, article)
    store = open_store(db_path)
    try:
        store.rebuild()
    finally:
        store.close()
    with closing(sqlite3.connect(db_path)) as c:
        assert c.execute("SELECT COUNT(*) FROM embeddings").fetchone() == (0,)


def test_what_an_embedder_gives_is_sound() -> None:
    matrix = SyntheticEmbedder().embed(["a", "b c"])
    assert all(vectors.sound(row.tobytes()) for row in matrix)
    assert not vectors.sound(np.ones(DIMENSIONS, dtype=np.float32).tobytes())
    assert not vectors.sound(b"\x00" * 12)
    assert not vectors.sound(np.full(DIMENSIONS, np.nan, dtype=np.float32).tobytes())
