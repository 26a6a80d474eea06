"""The resource rules as plain functions over a store (kbes.server.resources), and the log tail's
routing (kbes.server.push), without a server: the edges the MCP tests do not reach."""

from __future__ import annotations

import uuid

import anyio
import pytest

from kbes import KnowledgeBaseStore, format_timestamp
from kbes.server.push import RoutedBus, granted_routes
from kbes.server.resources import (
    article_uri,
    canonical_uri,
    knowledge_base_uri,
    list_knowledge_bases,
    read_resource,
    version_uri,
)
from kbes.tools import call_tool
from kbes.tools.codes import Gone, InvalidArgument, NotFound
from kbes.tools.wire import ArticleResult, Citation


def cite(store: KnowledgeBaseStore, kb: str, article: str) -> Citation:
    result = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
    )
    assert isinstance(result, ArticleResult)
    return result.citation


def test_a_pinned_version_reads_with_or_without_encoded_colons(
    store: KnowledgeBaseStore, kb: str
) -> None:
    article = str(store.add_article(kb, "Title", "first", publish=True))
    citation = cite(store, kb, article)
    uri = version_uri(citation)
    assert "%3A" in uri
    store.save_article(kb, article, content="second", title="Retitled")
    for spelled in (uri, uri.replace("%3A", ":")):
        found = read_resource(store, spelled)
        assert found.text == "# Title\n\nfirst"
        assert found.pinned and found.last_modified == citation.updated_at
    current = read_resource(store, article_uri(kb, article))
    assert current.text == "# Retitled\n\nsecond" and not current.pinned


def test_draft_era_versions_are_not_versions_of_the_resource(
    store: KnowledgeBaseStore, kb: str
) -> None:
    article = store.add_article(kb, "Title", "draft text")
    drafted = format_timestamp(store.get_article(article).updated_at)
    store.publish_article(kb, article)
    pinned = version_uri(
        Citation(knowledge_base_id=kb, article_id=str(article), updated_at=drafted)
    )
    with pytest.raises(NotFound, match="no published version"):
        read_resource(store, pinned)


def test_unpublished_current_is_gone_and_its_versions_stay(
    store: KnowledgeBaseStore, kb: str
) -> None:
    article = str(store.add_article(kb, "Title", "text", publish=True))
    uri = version_uri(cite(store, kb, article))
    store.unpublish_article(kb, article)
    with pytest.raises(Gone) as gone:
        read_resource(store, article_uri(kb, article))
    assert gone.value.to_dict()["unpublished_at"]
    assert read_resource(store, uri).text == "# Title\n\ntext"


def test_grants_and_bad_uris(store: KnowledgeBaseStore, kb: str) -> None:
    other = str(store.create_knowledge_base("Other"))
    article = str(store.add_article(other, "Theirs", "text", publish=True))
    with pytest.raises(NotFound):
        read_resource(store, article_uri(other, article), frozenset({kb}))
    with pytest.raises(NotFound):
        read_resource(store, knowledge_base_uri(other), frozenset({kb}))
    assert [k.knowledge_base_id for k in list_knowledge_bases(store, frozenset({kb}))] == [kb]
    with pytest.raises(InvalidArgument, match="not a kbes resource URI"):
        read_resource(store, "https://example.com/articles/1")


def test_listeners_hear_their_own_spelling_and_only_granted_current_uris() -> None:
    kb, other = "0a" * 4 + "-0000-4000-8000-" + "0" * 12, "0b" * 4 + "-0000-4000-8000-" + "0" * 12
    article = "0c" * 4 + "-0000-4000-8000-" + "0" * 12
    upper = article_uri(kb.upper(), article.upper())
    routes = granted_routes(
        [
            upper,
            article_uri(other, article),  # not granted
            version_uri(Citation(knowledge_base_id=kb, article_id=article, updated_at="x")),
            "nonsense",
        ],
        frozenset({kb}),
    )
    assert routes == {article_uri(kb, article): [upper]}
    assert canonical_uri(upper) == article_uri(kb, article)


async def _rings(routes: dict[str, list[str]], uris: list[str]) -> list[str]:
    from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, ServerEvent

    heard: list[str] = []
    bus = RoutedBus(InMemorySubscriptionBus(), routes, lambda: None, lambda: None)

    def hear(event: ServerEvent) -> None:
        assert isinstance(event, ResourceUpdated)
        heard.append(event.uri)

    bus.subscribe(hear)
    for uri in uris:
        await bus.publish(ResourceUpdated(uri=uri))
    return heard


def test_a_routed_bus_drops_what_was_not_asked() -> None:
    kb, asked, other = (str(uuid.uuid4()) for _ in range(3))
    routes = {article_uri(kb, asked): ["KBES-SPELLING"]}
    heard = anyio.run(_rings, routes, [article_uri(kb, other), *routes])
    assert heard == ["KBES-SPELLING"]


def test_an_over_long_uri_is_refused_without_echoing_it_whole(
    store: KnowledgeBaseStore, kb: str
) -> None:
    """Issue 35: a 1 MB URI came back three times in its error (message, data.message,
    data.uri). Now the error shows its start and its length."""
    from kbes.server.resource_handlers import resource_error

    for uri in (
        "x" * 1_000_000,
        knowledge_base_uri("x" * 1_000_000),
        article_uri(kb, "y" * 1_000_000),
    ):
        with pytest.raises(InvalidArgument) as refused:
            read_resource(store, uri)
        error = resource_error(uri, refused.value)
        assert f"({len(uri):,} characters)" in error.message
        assert len(error.message) + len(str(error.data)) < 2_000
