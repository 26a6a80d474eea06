"""`read_knowledge_article`: one current article whole, with the version to cite and edit."""

from __future__ import annotations

from uuid import UUID

from kbes.store.application import KnowledgeBaseStore
from kbes.tools.tool import READ_ONLY, Tool
from kbes.tools.wire import ArticleResult, ReadRequest, cite


def read(store: KnowledgeBaseStore, request: ReadRequest, kb: UUID) -> ArticleResult:
    article = store.read_article(kb, request.article_id)
    kb_text = str(kb)
    return ArticleResult(
        knowledge_base_id=kb_text,
        article_id=article.article_id,
        title=article.title,
        content=article.content,
        updated_at=article.updated_at,
        citation=cite(kb_text, article.article_id, article.updated_at),
    )


READ_TOOL = Tool(
    name="read_knowledge_article",
    title="Read knowledge article",
    description=(
        "Read one current published article by ID from a granted knowledge base and "
        "return its full content with a stable citation {knowledge_base_id, "
        "article_id, updated_at}. The updated_at is the version to pass as "
        "expected_version to edit_knowledge_article. An article that was unpublished "
        "returns the error code 'gone'; an unknown one 'not_found'."
    ),
    request=ReadRequest,
    result=ArticleResult,
    annotations=READ_ONLY,
    answer=read,
)
