"""The application's reads for callers outside the store room (the CLI, the server, the log's
tools, the sims): domain results, never the views' rows or the recorder's notifications."""

from __future__ import annotations

from uuid import UUID

import pytest

from kbes import Article, KnowledgeBaseStore
from kbes.domain.errors import NotFound
from kbes.log import export
from kbes.store import log_reads
from kbes.store.results import (
    ArticleSummary,
    FeedPage,
    KnowledgeBaseInfo,
    KnowledgeBaseSummary,
)


def test_knowledge_bases_and_articles_as_domain_results(store: KnowledgeBaseStore) -> None:
    kb = store.create_knowledge_base("Support")
    published = store.add_article(kb, "Billing", "Invoices go out monthly.", publish=True)
    draft = store.add_article(kb, "Alpha", "not yet")
    store.catch_up()

    [summary] = store.knowledge_bases()
    assert isinstance(summary, KnowledgeBaseSummary)
    assert (summary.knowledge_base_id, summary.name, summary.articles, summary.published) == (
        str(kb),
        "Support",
        2,
        1,
    )
    # The CLI's --json prints these keys in this order, as it printed the views' columns.
    assert list(summary._asdict()) == [
        "knowledge_base_id",
        "name",
        "created_at",
        "articles",
        "published",
    ]
    found = store.knowledge_base(kb)
    assert found == KnowledgeBaseInfo(str(kb), "Support", summary.created_at)
    assert store.knowledge_base(str(kb).upper()) == found
    assert store.knowledge_base("no-such-id") is None
    assert store.knowledge_base(UUID(int=1)) is None

    rows = store.articles(kb)
    assert [r.article_id for r in rows] == [str(draft), str(published)]  # by title
    assert all(isinstance(r, ArticleSummary) for r in rows)
    assert [r.status for r in rows] == ["draft", "published"]
    assert list(rows[0]._asdict()) == ["article_id", "title", "status", "version", "updated_at"]


def test_version_history_and_the_article_at_a_version(store: KnowledgeBaseStore) -> None:
    kb = store.create_knowledge_base("Support")
    article = store.add_article(kb, "Billing", "Invoices go out monthly.", publish=True)
    store.save_article(kb, article, title="Invoices", content="Invoices go out weekly.")
    store.catch_up()

    history = store.version_history(article)
    assert history is not None
    assert history.knowledge_base_id == kb
    assert [(v.version, v.type) for v in history.versions] == [
        (1, "drafted"),
        (2, "published"),
        (3, "retitled"),
    ]
    assert [v.sequence for v in history.versions] == sorted(v.sequence for v in history.versions)
    assert store.version_history(UUID(int=1)) is None

    first = store.article_at_version(article, 1)
    assert isinstance(first, Article)
    assert (first.version, first.title, first.published) == (1, "Billing", False)
    assert store.article_at_version(article, 3).title == "Invoices"
    with pytest.raises(NotFound):
        store.article_at_version(UUID(int=1), 1)
    with pytest.raises(NotFound):
        store.article_at_version(kb, 1)  # a knowledge base's id names no article


def test_logged_events_in_order_paged_and_limited(
    store: KnowledgeBaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_reads, "PAGE_SIZE", 3)
    kb = store.create_knowledge_base("Support")
    ids = store.add_articles(kb, [(f"t{i}", "text") for i in range(4)], publish=True)
    head = store.head()

    logged = list(store.logged_events())
    assert [sequence for sequence, _ in logged] == list(range(1, head + 1))
    assert [type(event) for _, event in logged[1:3]] == [Article.Drafted, Article.Published]
    assert [event.originator_id for _, event in logged[1::2]] == ids
    assert list(store.logged_events(4)) == logged[4:]
    assert list(store.logged_events(2, limit=4)) == logged[2:6]
    assert list(store.logged_events(head)) == []
    assert list(store.logged_events(head, limit=1)) == []
    # Export lines come from the same reads.
    assert [line.sequence for line in export.log_events(store, after=5)] == list(range(6, head + 1))


def test_a_feed_page_says_where_the_next_one_starts(store: KnowledgeBaseStore) -> None:
    kb = store.create_knowledge_base("Support")
    store.add_article(kb, "Draft", "never in the feed")
    published = [store.add_article(kb, f"t{i}", "text", publish=True) for i in range(3)]
    head = store.head()

    full = store.feed_page(kb, 0, 2)
    assert isinstance(full, FeedPage)
    assert [e.type for e in full.events] == ["published", "published"]
    assert [e.article_id for e in full.events] == [str(a) for a in published[:2]]
    assert full.has_more and full.next_sequence == full.events[-1].sequence
    assert full.head == head

    short = store.feed_page(kb, full.next_sequence, 2)
    assert [e.article_id for e in short.events] == [str(published[2])]
    assert not short.has_more and short.next_sequence == head  # past what it never shows

    assert store.feed_page(kb, head, 2) == FeedPage([], head, False, head)
    with pytest.raises(ValueError):
        store.feed_page(kb, 0, 0)
