"""Each commit of a keyword index adds a document holding the log position it reflects and
leaves the older ones, until as many are held as the index's size allows (`POSITIONS_KEPT`) and
one commit deletes them all: the newest is the position, whatever is held. An index in another
format is built again."""

from __future__ import annotations

import pytest
import tantivy

from kbes import KnowledgeBaseStore, open_store
from kbes.projections import keyword_schema as K

pytestmark = pytest.mark.usefixtures("every_index_in_a_folder")


def held(store: KnowledgeBaseStore, kb: str) -> tuple[int, int]:
    """The position documents the knowledge base's index holds, and the position it reads."""
    keyword = store.views.keyword
    index = keyword.index(kb)
    index.reload()
    searcher = index.searcher()
    return K.positions_held(searcher), K.read_position(searcher, keyword.source())[0]


def ids(store: KnowledgeBaseStore, kb: str, query: str) -> list[str]:
    return [h.article_id for h in store.search(kb, query, 50)]


def test_the_newest_position_is_read_and_old_ones_are_deleted_together(
    store, kb, monkeypatch
) -> None:
    monkeypatch.setattr(K, "POSITIONS_KEPT", 3)
    monkeypatch.setattr(K, "POSITIONS_SHARE", 1)
    store.add_articles(kb, [("Other", "Unrelated."), ("Another", "Unrelated.")], publish=True)
    article = str(store.add_article(kb, "Care", "Feed it word0.", publish=True))
    assert ids(store, kb, "word0") == [article]
    counts = [held(store, kb)[0]]
    for n in range(1, 8):
        store.save_article(kb, article, content=f"Feed it word{n}.")
        assert ids(store, kb, f"word{n}") == [article]
        count, position = held(store, kb)
        assert position == store.head()
        counts.append(count)
    assert counts == [1, 2, 3, 1, 2, 3, 1, 2]
    assert ids(store, kb, "word0") == []


def test_a_small_knowledge_base_keeps_one_position_document(store, kb) -> None:
    """BM25 counts the kept documents among the articles: below twice `POSITIONS_SHARE`
    articles, every commit deletes the last one."""
    article = str(store.add_article(kb, "Care", "Feed it word0.", publish=True))
    for n in range(1, 5):
        store.save_article(kb, article, content=f"Feed it word{n}.")
        assert ids(store, kb, f"word{n}") == [article]
        assert held(store, kb) == (1, store.head())


def test_an_index_in_another_format_is_built_again(db_path, kb, store) -> None:
    article = str(store.add_article(kb, "Care", "Feed the penguin.", publish=True))
    assert ids(store, kb, "penguin") == [article]
    folder = store.views.keyword.root / kb
    store.close()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("title", stored=True)
    other = tantivy.Index(builder.build(), path=str(folder), reuse=False)
    writer = other.writer(15_000_000, 1)
    writer.add_document(tantivy.Document(title="penguin"))
    writer.commit()
    writer.wait_merging_threads()
    reopened = open_store(db_path)
    try:
        assert ids(reopened, kb, "penguin") == [article]
        assert held(reopened, kb) == (1, reopened.head())
    finally:
        reopened.close()
