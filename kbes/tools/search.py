"""`search_knowledge_base`: ranked current articles, each hit with the citation to keep."""

from __future__ import annotations

from uuid import UUID

from kbes.store.application import KnowledgeBaseStore
from kbes.tools.tool import READ_ONLY, Tool
from kbes.tools.wire import SearchHit, SearchRequest, SearchResult, cite


def search(store: KnowledgeBaseStore, request: SearchRequest, kb: UUID) -> SearchResult:
    hits = store.search(kb, request.query, request.limit)
    kb_text = str(kb)
    return SearchResult(
        knowledge_base_id=kb_text,
        query=request.query,
        hits=[
            SearchHit(
                article_id=hit.article_id,
                title=hit.title,
                snippet=hit.snippet,
                updated_at=hit.updated_at,
                citation=cite(kb_text, hit.article_id, hit.updated_at),
            )
            for hit in hits
        ],
    )


SEARCH_TOOL = Tool(
    name="search_knowledge_base",
    title="Search knowledge base",
    description=(
        "Search current published articles in one granted knowledge base. Results are "
        "ranked, and each hit carries the article ID, its title, a snippet, and its "
        "updated_at with a citation {knowledge_base_id, article_id, updated_at}; cite "
        "that, since updated_at is the version you read. This is a live read: drafts "
        "and unpublished articles never appear. The query is plain text (2-200 "
        "characters); no search operators."
    ),
    request=SearchRequest,
    result=SearchResult,
    annotations=READ_ONLY,
    answer=search,
)
