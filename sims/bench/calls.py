"""The operations the latency rows time: kbes through the tool layer, as the MCP server calls
it, and the same operation on the plain-sqlite3 baseline."""

from __future__ import annotations

from collections.abc import Callable

from kbes import KnowledgeBaseStore, call_tool
from kbes.sims.baseline import Baseline


def kbes_reader(store: KnowledgeBaseStore, kb: str) -> Callable[[str], object]:
    """`read_knowledge_article` through the tool layer, as the MCP server calls it."""

    def read(article: str) -> object:
        return call_tool(
            store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
        )

    return read


def kbes_searcher(store: KnowledgeBaseStore, kb: str) -> Callable[[str], object]:
    def search(query: str) -> object:
        return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})

    return search


def kbes_poller(store: KnowledgeBaseStore, kb: str) -> Callable[[int], object]:
    def poll(after: int) -> object:
        return call_tool(
            store,
            "poll_resource_events",
            {
                "resource_type": "knowledge_base",
                "resource_id": kb,
                "after_sequence": after,
                "limit": 100,
            },
        )

    return poll


def baseline_reader(baseline: Baseline, kb: str) -> Callable[[str], object]:
    def read(article: str) -> object:
        return baseline.read(kb, article)

    return read


def baseline_searcher(baseline: Baseline, kb: str) -> Callable[[str], object]:
    def search(query: str) -> object:
        return baseline.search(kb, query)

    return search


def baseline_poller(baseline: Baseline, kb: str) -> Callable[[int], object]:
    def poll(after: int) -> object:
        return baseline.poll(kb, after, 100)

    return poll
