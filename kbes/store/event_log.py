"""The store's one eventsourcing `Application`: the event log, its one way to save, the lookup of
an aggregate by id, and the log's reads the views and the feed are made from.

Every write goes through `save`, so an article's event, its edit receipt and its feed-index row
commit together or not at all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import Recording
from eventsourcing.utils import get_topic

from kbes.domain.article import PUBLISHING, Article, in_feed
from kbes.store.feed import FeedReader
from kbes.store.internals import project_unchecked, save_unchecked
from kbes.store.mapper import MsgspecMapper
from kbes.store.sqlite import FEED_KWARG, KbesSQLiteDatastore, KbesSQLiteFactory, ViewsHome

A = TypeVar("A")


class EventLog(Application[UUID]):
    """Writes and loads the aggregates: knowledge bases, articles and edit receipts."""

    name = "kbes"
    env: ClassVar[dict[str, str]] = {
        "PERSISTENCE_MODULE": get_topic(KbesSQLiteFactory),
        # Edits load articles from the cache, fast-forwarded by one query, never by replaying
        # the whole history: without it an edit's cost grows with the article's history.
        "AGGREGATE_CACHE_MAXSIZE": "10000",
        "AGGREGATE_CACHE_FASTFORWARD": "y",
    }
    # A load with an empty cache (a fresh process, an evicted article) starts from the latest
    # snapshot, so it replays at most 99 events, never the whole history (kbes bench rows
    # 4c/4d). One snapshot per 100 versions.
    snapshotting_intervals: ClassVar[dict[type, int]] = {Article: 100}
    snapshotting_projectors: ClassVar[dict[type, Any]] = {Article: project_unchecked}

    mapper: MsgspecMapper

    def construct_mapper(self) -> MsgspecMapper:
        return MsgspecMapper()

    @property
    def feed(self) -> FeedReader:
        """The log's reads for the views and the feed: SQLite's FeedApplicationRecorder or
        kbes.store.postgres's PostgresFeedRecorder, the same FeedReader either way."""
        # eventsourcing types `recorder` as the ApplicationRecorder a factory may return;
        # both of kbes's factories return one of these.
        return cast(FeedReader, self.recorder)

    @property
    def views_datastore(self) -> KbesSQLiteDatastore:
        """Where this process keeps its views: SQLite's own file, or a local SQLite file beside
        a PostgreSQL log (kbes.store.postgres)."""
        return cast(ViewsHome, self.factory).views_datastore

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

    def get(self, aggregate_id: UUID, kind: type[A], version: int | None = None) -> A | None:
        """The aggregate if there is one of this kind (as of `version`, if given: folded from
        the latest snapshot at or before it): knowledge bases, articles and edit receipts share
        one id space in the log, so an id of another kind is not found."""
        try:
            found = self.repository.get(
                aggregate_id, version=version, projector_func=project_unchecked
            )
        except AggregateNotFoundError:
            return None
        return found if isinstance(found, kind) else None


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


__all__ = ["EventLog", "feed_entries"]
