"""Reads of the log's past, for the people's log work (kbes.log: history, audit, export): an
article's versions, the article as it was at one of them, and the log's events in order."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

from kbes.domain.article import Article
from kbes.domain.author import Author
from kbes.domain.errors import ArticleUnknown
from kbes.projections.views import Views
from kbes.store.event_log import EventLog
from kbes.store.results import ArticleVersion, LoggedEvent, VersionHistory

PAGE_SIZE = 500
"""Events read from the log per query by `logged_events`."""


class LogReads:
    """The article's history and the whole log, read through the application."""

    def __init__(self, log: EventLog, views: Views) -> None:
        self.log = log
        self.views = views

    def version_history(self, article_id: UUID) -> VersionHistory | None:
        """Every version of the article, oldest first, as the version-history view holds it
        (call `catch_up` first to see every write); None if the views know no such article."""
        row = self.views.article(str(article_id))
        if row is None:
            return None
        versions = [
            ArticleVersion(r["version"], r["updated_at"], r["type"], r["notification_id"])
            for r in self.views.versions(str(article_id))
        ]
        return VersionHistory(UUID(row["knowledge_base_id"]), versions)

    def article_at_version(self, article_id: UUID, version: int) -> Article:
        """The article aggregate folded from its first `version` events (from the latest
        snapshot at or before it). For the article as it stands now, `get_article` is cheaper:
        it fast-forwards the cached aggregate."""
        article = self.log.get(article_id, Article, version)
        if article is None:
            raise ArticleUnknown(article_id)
        return article

    def article_authors(self, article_id: UUID, after: int = 0) -> dict[int, Author | None]:
        """Who wrote each version of the article after version `after`, read from its events
        in the log (the views keep no authors): None for an event written before kbes
        recorded them."""
        return {
            event.originator_version: getattr(event, "author", None)
            for event in self.log.events.get(article_id, gt=after or None)
        }

    def logged_events(self, after: int = 0, *, limit: int | None = None) -> Iterator[LoggedEvent]:
        """The log's events after sequence `after`, in order, each decoded by the store's
        mapper: up to `limit` of them, or without a limit every one up to the head of the log
        as it was when the first was asked for."""
        stop = self.log.head() if limit is None else None
        start, left = after + 1, limit
        while (stop is None or start <= stop) and (left is None or left > 0):
            size = PAGE_SIZE if left is None else min(PAGE_SIZE, left)
            notifications = self.log.recorder.select_notifications(start, size, stop=stop)
            if not notifications:
                return
            for notification in notifications:
                yield LoggedEvent(notification.id, self.log.mapper.to_domain_event(notification))
            if left is not None:
                left -= len(notifications)
            start = notifications[-1].id + 1


__all__ = ["LogReads"]
