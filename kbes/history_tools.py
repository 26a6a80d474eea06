"""The fifth, opt-in agent tool: `diff_knowledge_article`, what changed since a cited version.

After `poll_resource_events` reports a cited article as moved, an agent can fetch only the
change (a unified diff of title and content) instead of re-reading the whole article. Served by
`kbes serve --history-tools`; the four default tools stay the live server's contract."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from msgspec import Meta

from kbes.application import Grants, KnowledgeBaseStore
from kbes.clock import format_timestamp
from kbes.errors import Gone, InvalidVersion, NotFound
from kbes.history import History, StoreSource, unified_diff
from kbes.tools import READ_ONLY, Tool
from kbes.wire import ArticleId, Citation, KnowledgeBaseId, Request, Timestamp, Wire


class DiffRequest(Request):
    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId
    since_version: Annotated[
        datetime,
        Meta(
            tz=True,
            description=(
                "The updated_at of your citation of this article: the version your answer "
                "relied on. The diff runs from it to the current version."
            ),
        ),
    ]


class ArticleChange(Wire):
    """One event on the article since the cited version."""

    sequence: int
    type: str
    updated_at: Timestamp


class DiffResult(Wire):
    knowledge_base_id: str
    article_id: str
    since_version: Timestamp
    updated_at: Timestamp
    title: str
    changed: Annotated[
        bool, Meta(description="False when the cited version is still the current one.")
    ]
    changes: Annotated[
        list[ArticleChange],
        Meta(description="Events since the cited version, oldest first."),
    ]
    diff: Annotated[
        str,
        Meta(
            description=(
                "Unified diff from the cited version to the current one; the first line of "
                "each side is '# <title>'. Empty when nothing changed."
            )
        ),
    ]
    citation: Citation


def diff_article(
    store: KnowledgeBaseStore, request: DiffRequest, grants: Grants = None
) -> DiffResult:
    """The changes to a published article since `since_version`. `not_found` for an unknown
    (or draft, or ungranted) article, `invalid` if it never had a published version at
    `since_version`, `gone` if it is unpublished now."""
    kb = store._knowledge_base_uuid(request.knowledge_base_id, grants)
    history = History(StoreSource(store))
    article_id = _maybe_uuid(request.article_id)
    article = None if article_id is None else history.history(article_id)
    if (
        article is None
        or article.knowledge_base_id != kb
        or not any(v.type == "published" for v in article.versions)
    ):
        raise NotFound(
            f"no published article {request.article_id} in this knowledge base; "
            "search the knowledge base for current articles"
        )
    since = format_timestamp(request.since_version)
    cited = article.at(request.since_version)
    old = None if cited is None else history.state(article, cited)
    if cited is None or old is None or not old.published:
        raise InvalidVersion(
            f"article {request.article_id} never had a published version at {since}, so no "
            "read could have cited it; check since_version against the citation's updated_at, "
            "or read the article again",
            since_version=since,
        )
    latest = article.versions[-1]
    new = history.state(article, latest)
    if not new.published:
        raise Gone(
            f"article {request.article_id} was unpublished at {latest.updated_at}; it is no "
            "longer an answer. Search again for a current article.",
            unpublished_at=latest.updated_at,
        )
    changes = [
        ArticleChange(sequence=v.sequence, type=v.type, updated_at=v.updated_at)
        for v in article.versions
        if v.version > cited.version
    ]
    return DiffResult(
        knowledge_base_id=str(kb),
        article_id=new.article_id,
        since_version=since,
        updated_at=new.updated_at,
        title=new.title,
        changed=bool(changes),
        changes=changes,
        diff=unified_diff(old, new),
        citation=Citation(
            knowledge_base_id=str(kb), article_id=new.article_id, updated_at=new.updated_at
        ),
    )


def _maybe_uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None


DIFF_TOOL = Tool(
    name="diff_knowledge_article",
    title="Diff knowledge article",
    description=(
        "Show what changed in one published article since the version you cited: pass the "
        "citation's updated_at as since_version. Returns a unified diff of title and content "
        "from that version to the current one, the events since, and the current citation "
        "{knowledge_base_id, article_id, updated_at} to cite from now on. Use it after "
        "poll_resource_events reports a cited article as saved or retitled: it returns only "
        "what moved, not the whole article, so you can tell whether the passage your answer "
        "used changed. Errors: 'gone' if the article was unpublished, 'invalid' if it never "
        "had that version (a garbled citation: read the article again), 'not_found' for an "
        "unknown article."
    ),
    request=DiffRequest,
    result=DiffResult,
    annotations=READ_ONLY,
    run=lambda store, request, grants: diff_article(store, request, grants),
)

HISTORY_TOOLS: list[Tool] = [DIFF_TOOL]
"""The opt-in history tools, served by `kbes serve --history-tools`."""
