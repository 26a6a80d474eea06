"""The diff tool shows no more than the feed (issue 13, defect 11): its `changes` are exactly
the events `poll_resource_events` reported for the article after the cited version, so saves
and retitles made while the article was unpublished never show through it."""

from __future__ import annotations

from uuid import UUID

from tool_calls import call

from kbes import Article, KnowledgeBaseStore
from kbes.domain.article import in_feed
from kbes.log.history import History


def polled(store: KnowledgeBaseStore, kb: str, article: str, after: int) -> list[dict]:
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
    return [
        {k: e[k] for k in ("sequence", "type", "updated_at")}
        for e in page["events"]
        if e["article_id"] == article and e["sequence"] > after
    ]


def test_changes_are_what_the_feed_showed(store: KnowledgeBaseStore, kb: str) -> None:
    article = str(store.add_article(kb, "Billing", "Invoices go out monthly.", publish=True))
    cited = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    store.save_article(kb, article, content="Invoices go out weekly.")  # published: polled
    head = polled(store, kb, article, 0)[-1]["sequence"]
    store.unpublish_article(kb, article)
    store.save_article(kb, article, content="Draft: the merger closes on Friday.")
    store.save_article(kb, article, title="Project Falcon", content="Still secret.")
    store.save_article(kb, article, title="Billing", content="Invoices go out weekly, by email.")
    store.publish_article(kb, article)
    store.save_article(kb, article, content="Invoices go out weekly, by email, in PDF.")

    diff = call(
        store,
        "diff_knowledge_article",
        knowledge_base_id=kb,
        article_id=article,
        since_version=cited["updated_at"],
    )
    feed = polled(store, kb, article, 0)
    assert [c["type"] for c in diff["changes"]] == [
        "saved",
        "unpublished",
        "published",
        "saved",
    ]
    assert diff["changes"] == feed[1:]  # everything the feed showed after the cited publish
    assert all(c["sequence"] <= head or c["type"] != "retitled" for c in diff["changes"])
    # The diff runs from the cited version to the current one: both were readable; nothing
    # of the versions the article had while unpublished is in it.
    for secret in ("merger", "Falcon", "Still secret"):
        assert secret not in diff["diff"]
    assert diff["changed"] is True


def test_one_visibility_rule_for_the_feed_and_the_histories(
    store: KnowledgeBaseStore, kb: str
) -> None:
    """The feed's rule is the domain's `in_feed`: the feed index written with each batch (walked
    backwards from the article's final state) and `ArticleHistory.polled` (walked forwards
    through the versions) show the same events."""
    assert [
        in_feed(kind, published)
        for kind in (
            Article.Drafted,
            Article.Published,
            Article.Saved,
            Article.Retitled,
            Article.Unpublished,
        )
        for published in (False, True)
    ] == [False, False, True, True, False, True, False, True, True, True]
    article = Article.draft(UUID(kb), "Billing", "v1")
    article.save("v2")  # a draft's save: never shown
    article.publish()
    article.save("v3", "Invoices")
    article.unpublish()
    article.save("v4")  # a save while unpublished: never shown
    article.publish()
    article.save("v5")
    store.save(article)  # one batch of eight events
    store.save_article(kb, article.id, content="v6")

    feed = polled(store, kb, str(article.id), 0)
    assert [e["type"] for e in feed] == [
        "published",
        "retitled",
        "unpublished",
        "published",
        "saved",
        "saved",
    ]
    history = History.of(store).history(article.id)
    assert history is not None
    assert [(v.sequence, v.type, v.updated_at) for v in history.polled()] == [
        (e["sequence"], e["type"], e["updated_at"]) for e in feed
    ]
