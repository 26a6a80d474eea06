"""`edit_knowledge_article`: replace an article, applied only at the cited version and at most
once per idempotency key."""

from __future__ import annotations

from uuid import UUID

from msgspec import UNSET

from kbes.domain.author import Author
from kbes.domain.clock import format_timestamp
from kbes.store.application import KnowledgeBaseStore
from kbes.store.results import Edited
from kbes.tools.tool import WRITE, Tool
from kbes.tools.wire import EditRequest, EditResult, cite


def edit(
    store: KnowledgeBaseStore, request: EditRequest, kb: UUID, author: Author | None
) -> EditResult:
    """The edit, its events recorded as `author`'s (the caller's door says who: never the
    arguments, which hold no author)."""
    edited = store.edit_article(
        kb,
        request.article_id,
        request.content,
        expected_version=request.expected_version,
        idempotency_key=request.idempotency_key,
        title=None if request.title is UNSET else request.title,
        by=author,
    )
    return edit_result(edited)


def edit_result(edited: Edited) -> EditResult:
    stamp = format_timestamp(edited.updated_at)
    kb_text, article_text = str(edited.knowledge_base_id), str(edited.article_id)
    return EditResult(
        knowledge_base_id=kb_text,
        article_id=article_text,
        title=edited.title,
        updated_at=stamp,
        citation=cite(kb_text, article_text, stamp),
        replay=edited.replay,
    )


EDIT_TOOL = Tool(
    name="edit_knowledge_article",
    title="Edit knowledge article",
    description=(
        "Replace an article's whole content and optionally its title. Pass the "
        "updated_at from a recent read_knowledge_article as expected_version: if the "
        "article changed since, the edit is rejected with 'version_conflict' and the "
        "current version, so read it again, re-apply your change to the current "
        "content, and retry with the new version (a citation an hour old fails about "
        "four times in ten). Pass a fresh idempotency_key for each intended change: "
        "retrying a call with the same key is safe, never writes twice, and returns "
        "the first result marked replay=true. The saved article is what every "
        "assistant and search in the workspace answers from next."
    ),
    request=EditRequest,
    result=EditResult,
    annotations=WRITE,
    answer=edit,
    authored=True,
)
