"""What the application's queries and commands answer, in domain terms: plain values the
agent contract (kbes.tools), the log's tools (kbes.log) and the CLI each turn into their own
shapes. No database row leaves the store: each query answers one of these."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID


class Hit(NamedTuple):
    """One search hit: a current published article, at the version the index holds."""

    article_id: str
    title: str
    snippet: str
    updated_at: str


class CurrentArticle(NamedTuple):
    """A published article as it stands now; `updated_at` is the version to cite."""

    article_id: str
    title: str
    content: str
    updated_at: str


class Edited(NamedTuple):
    """The outcome of an edit: the article's version after it, and whether this answer is the
    replay of an earlier one with the same idempotency key."""

    knowledge_base_id: UUID
    article_id: UUID
    title: str
    updated_at: datetime
    replay: bool


class FeedEvent(NamedTuple):
    """One event of a knowledge base's feed, as the poll tool reports it."""

    sequence: int
    """The event's notification id: its position in the whole log."""
    type: str
    """`published`, `saved`, `retitled` or `unpublished` (kbes.domain.article.EVENT_TYPES)."""
    article_id: str
    """Canonical UUID text."""
    updated_at: str
    """The article's version after the event, as `clock.format_timestamp` writes it."""


class FeedPage(NamedTuple):
    """One page of a knowledge base's feed, and where the next one starts."""

    events: list[FeedEvent]
    next_sequence: int
    """The cursor to resume from: pass it as `after` for the next page."""
    has_more: bool
    """True when more events may be waiting after this page: read on at once."""
    head: int
    """The head of the whole log when the page was read."""

    @classmethod
    def of(cls, events: list[FeedEvent], head: int, limit: int) -> FeedPage:
        """The resume rule: a full page may have more behind it, so resume after its last
        event; a short one has read to `head`, so resume there (past drafts and other knowledge
        bases' events, which are never read again)."""
        full = len(events) == limit
        return cls(events, events[-1].sequence if full else head, full, head)


class KnowledgeBaseInfo(NamedTuple):
    """A knowledge base as the views hold it."""

    knowledge_base_id: str
    name: str
    created_at: str


class KnowledgeBaseSummary(NamedTuple):
    """A knowledge base with its article counts, drafts and unpublished ones included in
    `articles`."""

    knowledge_base_id: str
    name: str
    created_at: str
    articles: int
    published: int


class ArticleSummary(NamedTuple):
    """An article of any status (`draft`, `published`, `unpublished`) as it stands now."""

    article_id: str
    title: str
    status: str
    version: int
    updated_at: str


class ArticleVersion(NamedTuple):
    """One version of an article: the event that made it and where it is in the log."""

    version: int
    updated_at: str
    type: str
    """The event's wire name (kbes.domain.article.EVENT_TYPES), `drafted` included."""
    sequence: int
    """The notification id of the event in the log."""


class VersionHistory(NamedTuple):
    """Every version of one article, oldest first."""

    knowledge_base_id: UUID
    versions: list[ArticleVersion]


class LoggedEvent(NamedTuple):
    """One event of the log with its sequence (notification id), decoded by the store's
    mapper."""

    sequence: int
    event: Any


__all__ = [
    "ArticleSummary",
    "ArticleVersion",
    "CurrentArticle",
    "Edited",
    "FeedEvent",
    "FeedPage",
    "Hit",
    "KnowledgeBaseInfo",
    "KnowledgeBaseSummary",
    "LoggedEvent",
    "VersionHistory",
]
