"""A search is answered from the keyword index's last commit while no article changed since
holds any of its terms, before or after the change (`DEFER_AT_MOST`): it finds what a caught-up
index finds, and only a search a change can alter pays for a commit."""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from kbes import KnowledgeBaseStore, open_store
from kbes.domain.errors import ArticleUnpublished
from kbes.projections import keyword_schema as K
from kbes.projections.keyword_index import DEFER_AT_MOST


def committed(store: KnowledgeBaseStore, kb: str) -> int:
    """The log position of the knowledge base's index as last committed."""
    keyword = store.views.keyword
    index = keyword.index(kb)
    index.reload()
    return K.read_position(index.searcher(), keyword.source())[0]


def ids(store: KnowledgeBaseStore, kb: str, query: str) -> list[str]:
    return [h.article_id for h in store.search(kb, query, 50)]


def test_a_save_without_the_searched_words_leaves_the_commit_alone(store, kb) -> None:
    penguin = str(store.add_article(kb, "Penguin care", "Feed the penguin fish.", publish=True))
    store.add_article(kb, "Zebra care", "Brush the zebra weekly.", publish=True)
    assert ids(store, kb, "penguin") == [penguin]
    before = committed(store, kb)
    other = str(store.add_article(kb, "Walrus care", "Walrus tusks need checks.", publish=True))
    assert ids(store, kb, "penguin") == [penguin]
    assert committed(store, kb) == before
    assert ids(store, kb, "walrus") == [other]
    assert committed(store, kb) > before


def test_a_word_edited_away_is_not_found_from_the_old_commit(store, kb) -> None:
    a = str(store.add_article(kb, "Care", "The penguin eats fish.", publish=True))
    assert ids(store, kb, "penguin") == [a]
    store.save_article(kb, a, content="It eats fish.")
    assert ids(store, kb, "penguin") == []


def test_an_unpublished_article_is_not_found_from_the_old_commit(store, kb) -> None:
    a = str(store.add_article(kb, "Care", "The penguin eats fish.", publish=True))
    assert ids(store, kb, "penguin") == [a]
    store.unpublish_article(kb, a)
    assert ids(store, kb, "penguin") == []


def test_a_hit_is_the_version_that_holds_the_word_now(store, kb) -> None:
    a = str(store.add_article(kb, "Care", "The penguin eats fish.", publish=True))
    assert ids(store, kb, "penguin") == [a]
    store.save_article(kb, a, content="The penguin eats krill.")
    [hit] = store.search(kb, "penguin", 5)
    assert hit.updated_at == store.read_article(kb, a).updated_at
    assert "krill" in hit.snippet


def test_more_changes_than_the_bound_are_committed_whatever_the_words(store, kb) -> None:
    penguin = str(store.add_article(kb, "Penguin care", "Feed the penguin.", publish=True))
    assert ids(store, kb, "penguin") == [penguin]
    before = committed(store, kb)
    notes = [(f"Note {n}", "Unrelated text.") for n in range(DEFER_AT_MOST)]
    store.add_articles(kb, notes, publish=True)
    assert ids(store, kb, "penguin") == [penguin]
    assert committed(store, kb) == before
    store.add_article(kb, "One more", "Still unrelated.", publish=True)
    assert ids(store, kb, "penguin") == [penguin]
    assert committed(store, kb) > before


WORDS = ("alpha", "bravo", "charlie", "delta", "echo")
ARTICLES = 4
Step = tuple[str, int, frozenset[str]]
step: st.SearchStrategy[Step] = st.one_of(
    st.tuples(st.just("save"), st.integers(0, ARTICLES - 1), st.frozensets(st.sampled_from(WORDS))),
    st.tuples(st.just("unpublish"), st.integers(0, ARTICLES - 1), st.just(frozenset())),
    st.tuples(st.just("publish"), st.integers(0, ARTICLES - 1), st.just(frozenset())),
    st.tuples(st.just("search"), st.integers(0, len(WORDS) - 1), st.just(frozenset())),
)


@settings(max_examples=150)
@given(steps=st.lists(step, min_size=1, max_size=30))
def test_every_search_finds_what_the_articles_hold_now(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Step]
) -> None:
    """Model-based: after any saves, unpublishings and searches, a search finds exactly the
    published articles holding its word, each at its current version."""
    path: Path = tmp_path_factory.mktemp("defer") / "kb.sqlite"
    store = open_store(path)
    try:
        kb = str(store.create_knowledge_base("Model"))
        articles = [
            str(store.add_article(kb, f"Note {n}", "plain text", publish=True))
            for n in range(ARTICLES)
        ]
        published = set(articles)
        for action, n, words in steps:
            if action == "save":
                text = " ".join(["plain", *sorted(words)])
                store.save_article(kb, articles[n], content=text)
            elif action == "unpublish" and articles[n] in published:
                store.unpublish_article(kb, articles[n])
                published.discard(articles[n])
            elif action == "publish" and articles[n] not in published:
                store.publish_article(kb, articles[n])
                published.add(articles[n])
            elif action != "search":
                continue
            else:
                word = WORDS[n]
                expected = {}
                for a in articles:
                    try:
                        current = store.read_article(kb, a)
                    except ArticleUnpublished:
                        continue
                    if word in current.content.split():
                        expected[a] = current.updated_at
                found = {h.article_id: h.updated_at for h in store.search(kb, word, 50)}
                assert found == expected, (word, steps)
    finally:
        store.close()


WORD_REGEX = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(r"\w+"))
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.ascii_fold())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
"""The ranking field's analyzer as it was, tantivy cutting the words with its regex."""


@given(text=st.text(st.characters(max_codepoint=127)))
def test_ascii_words_are_cut_as_tantivys_word_regex_cut_them(text: str) -> None:
    assert K.WORDS_ANALYZER.analyze(K.ranked_text(text)) == WORD_REGEX.analyze(text)
