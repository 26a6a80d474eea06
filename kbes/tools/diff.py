"""The fifth, opt-in agent tool: `diff_knowledge_article`, what changed since a cited version.

After `poll_resource_events` reports a cited article as moved, an agent can fetch only the
change (a unified diff of title and content) instead of re-reading the whole article. Served by
`kbes serve --history-tools`; the four default tools stay the live server's contract."""

from __future__ import annotations

from uuid import UUID

from kbes.domain.clock import format_timestamp
from kbes.domain.ids import parse_id
from kbes.log.history import History, StoreSource, unified_diff
from kbes.log.line_diff import DIFF_BUDGET
from kbes.store.application import KnowledgeBaseStore
from kbes.tools.refusals import never_published_at, no_article, no_longer_an_answer
from kbes.tools.tool import READ_ONLY, Tool
from kbes.tools.wire import ArticleChange, DiffRequest, DiffResult, cite


def diff_article(store: KnowledgeBaseStore, request: DiffRequest, kb: UUID) -> DiffResult:
    """The changes to a published article since `since_version`. `not_found` for an unknown
    (or draft) article, `invalid` if it never had a published version at `since_version`,
    `gone` if it is unpublished now; `too_large_to_diff` if the two versions differ too much,
    too intricately, to diff within `DIFF_BUDGET` (the agent reads the article instead)."""
    store.require_knowledge_base(kb)
    history = History(StoreSource(store))
    article_id = parse_id(request.article_id)
    article = None if article_id is None else history.history(article_id)
    if (
        article is None
        or article.knowledge_base_id != kb
        or not any(v.type == "published" for v in article.versions)
    ):
        raise no_article(request.article_id)
    since = format_timestamp(request.since_version)
    cited = article.at(request.since_version)
    old = None if cited is None else history.state(article, cited)
    if cited is None or old is None or not old.published:
        raise never_published_at(request.article_id, since)
    latest = article.versions[-1]
    new = history.state(article, latest)
    if not new.published:
        raise no_longer_an_answer(request.article_id, latest.updated_at)
    # Exactly the events a poll reported after the cited version: saves made while the
    # article was unpublished stay hidden here as they are in the feed.
    changes = [
        ArticleChange(sequence=v.sequence, type=v.type, updated_at=v.updated_at)
        for v in article.polled()
        if v.version > cited.version
    ]
    diff = unified_diff(old, new, budget=DIFF_BUDGET)
    return DiffResult(
        knowledge_base_id=str(kb),
        article_id=new.article_id,
        since_version=since,
        updated_at=new.updated_at,
        title=new.title,
        changed=bool(changes),
        changes=changes,
        diff=diff,
        citation=cite(str(kb), new.article_id, new.updated_at),
    )


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
    answer=diff_article,
    heavy=True,
)
