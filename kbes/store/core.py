"""What every part of the application shares: the log's reads, the one way to save, the lookup
of an aggregate by id, and the views brought up to the head of the log.

Every write goes through `save`, so an article's event, its edit receipt and its feed-index row
commit together or not at all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import Recording

from kbes.domain.article import PUBLISHING, Article, in_feed
from kbes.domain.clock import Clock
from kbes.domain.errors import ArticleUnknown, KnowledgeBaseNotFound
from kbes.domain.ids import parse_id, require_id
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.domain.limits import Limits
from kbes.projections.views import Views
from kbes.store.feed import FeedReader
from kbes.store.internals import project_unchecked, save_unchecked
from kbes.store.mapper import MsgspecMapper
from kbes.store.settings import Settings
from kbes.store.sqlite import FEED_KWARG

A = TypeVar("A")


class StoreCore(Application[UUID]):
    """The base of `KnowledgeBaseStore` (kbes.store.application), which sets these up."""

    clock: Clock
    views: Views
    mapper: MsgspecMapper
    _known_knowledge_bases: set[UUID]
    settings: Settings

    @property
    def limits(self) -> Limits:
        """What an article may hold here: every door's check and the tools' schemas."""
        return self.settings.limits

    @property
    def feed(self) -> FeedReader:
        """The log's reads for the views and the feed: SQLite's FeedApplicationRecorder or
        kbes.store.postgres's PostgresFeedRecorder, the same FeedReader either way."""
        # eventsourcing types `recorder` as the ApplicationRecorder a factory may return;
        # both of kbes's factories return one of these.
        return cast(FeedReader, self.recorder)

    def head(self) -> int:
        """The head of the log: the notification id of its last event, 0 when it is empty."""
        return self.feed.head()

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """eventsourcing's `save`, without its runtime Protocol checks (kbes.store.internals)."""
        return save_unchecked(self, objs, kwargs)

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        """Pass the feed entries of the events to the recorder, which writes them in the
        events' transaction: eventsourcing's `searchabletimestamps` example's way."""
        processing_event.saved_kwargs[FEED_KWARG] = feed_entries(
            processing_event.events, processing_event.aggregates
        )
        return super()._record(processing_event)

    def _get(self, aggregate_id: UUID, kind: type[A]) -> A | None:
        """The aggregate if there is one of this kind: knowledge bases, articles and edit
        receipts share one id space in the log, so an id of another kind is not found."""
        try:
            found = self.repository.get(aggregate_id, projector_func=project_unchecked)
        except AggregateNotFoundError:
            return None
        return found if isinstance(found, kind) else None

    def get_article(self, article_id: UUID | str) -> Article:
        """The article aggregate as it stands now, drafts included; `not_found` if none."""
        article = self._get(require_id(article_id, "article_id"), Article)
        if article is None:
            raise ArticleUnknown(article_id)
        return article

    def require_knowledge_base(self, knowledge_base_id: UUID | str) -> UUID:
        """The knowledge base's UUID; `not_found` if there is no such knowledge base."""
        return self._knowledge_base_uuid(knowledge_base_id)

    def _knowledge_base_uuid(self, knowledge_base_id: UUID | str) -> UUID:
        """The knowledge base's UUID if it exists; `KnowledgeBaseNotFound` naming the id as
        given otherwise (an id that parses to no UUID names no knowledge base either)."""
        kb = parse_id(knowledge_base_id)
        if kb is None:
            raise KnowledgeBaseNotFound(knowledge_base_id)
        if kb not in self._known_knowledge_bases:
            if self._get(kb, KnowledgeBase) is None:
                raise KnowledgeBaseNotFound(knowledge_base_id)
            self._known_knowledge_bases.add(kb)
        return kb

    # Projections ----------------------------------------------------------------------------

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Bring the views to the head of the log; one cheap query when already there."""
        return self.views.catch_up(self.feed, self.mapper, progress=progress)

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Replay the whole log into the views, invisibly to readers (Views.rebuild)."""
        return self.views.rebuild(self.feed, self.mapper, progress)


def feed_entries(events: Sequence[Any], aggregates: dict[Any, Any]) -> list[str | None]:
    """For each event about to be stored, the knowledge base whose feed shows it, or None.

    The feed's rule is the domain's (`kbes.domain.article.in_feed`), which needs to know
    whether the article was published when each event happened: walk the batch backwards from
    each article's final state."""
    published = {aid: agg.published for aid, agg in aggregates.items() if isinstance(agg, Article)}
    entries: list[str | None] = [None] * len(events)
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if not isinstance(event, Article.Event) or isinstance(event, Article.Drafted):
            continue
        aid, kind = event.originator_id, type(event)
        if kind in PUBLISHING:
            published[aid] = PUBLISHING[kind][0]
        if in_feed(kind, published[aid]):
            entries[i] = event.knowledge_base_id.hex
    return entries


__all__ = ["StoreCore", "feed_entries"]
