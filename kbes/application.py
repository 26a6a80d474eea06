"""The kbes application: people's commands, the agents' queries and edit, over one event log.

It speaks in domain terms (ids, text, instants; domain results and errors): the agent contract
in `kbes.tools` and the CLI each turn those into their own answers and words.

Every write goes through `Application.save`, so an article's event, its edit receipt and its
feed-index row commit together or not at all. Reads answer from the projections, which are
brought up to the head of the log first, so a read after any write (from any process) sees it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, ClassVar, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, Recording
from eventsourcing.utils import get_topic

from kbes.article import EVENT_TYPES, Article
from kbes.clock import Clock, SystemClock, format_timestamp, next_timestamp, timestamp_text
from kbes.errors import (
    ArticleChanged,
    ArticleElsewhere,
    ArticleNotFound,
    ArticleUnpublished,
    Gone,
    InvalidArgument,
    InvalidState,
    KeyReused,
    KnowledgeBaseNotFound,
    NotFound,
)
from kbes.feed import FeedEvent, FeedReader, full_decode
from kbes.ids import parse_id, require_id
from kbes.internals import project_unchecked, save_unchecked
from kbes.knowledge_base import KnowledgeBase
from kbes.limits import require_content, require_idempotency_key, require_title
from kbes.mapper import MsgspecMapper
from kbes.projections import search as search_index
from kbes.projections.views import Views
from kbes.receipt import EditReceipt, edit_fingerprint, receipt_id
from kbes.recorder import FEED_KWARG, KbesSQLiteFactory, ViewsHome, lock_timeout
from kbes.results import CurrentArticle, Edited, Hit

A = TypeVar("A")


class KnowledgeBaseStore(Application):
    """An event-sourced knowledge-base store."""

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

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(env)
        self.clock: Clock = clock or SystemClock()
        self._known_knowledge_bases: set[UUID] = set()
        # With a PostgreSQL log the views stay in a local SQLite file (kbes.postgres).
        factory = cast(ViewsHome, self.factory)
        self.views = Views(
            factory.views_datastore, application_name=self.name, source=(self.feed, self.mapper)
        )
        self.views.create_table()

    mapper: MsgspecMapper

    def construct_mapper(self) -> MsgspecMapper:
        return MsgspecMapper()

    @property
    def feed(self) -> FeedReader:
        """The log's reads for the views and the feed: SQLite's FeedApplicationRecorder or
        kbes.postgres's PostgresFeedRecorder, the same FeedReader either way."""
        return self.recorder  # type: ignore[return-value]

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording]:
        """eventsourcing's `save`, without its runtime Protocol checks (kbes.internals)."""
        return save_unchecked(self, objs, kwargs)

    def _record(self, processing_event: ProcessingEvent) -> list[Recording]:
        """Pass the feed entries of the events to the recorder, which writes them in the
        events' transaction: eventsourcing's `searchabletimestamps` example's way."""
        processing_event.saved_kwargs[FEED_KWARG] = feed_entries(
            processing_event.events, processing_event.aggregates
        )
        return super()._record(processing_event)

    # People-side commands ----------------------------------------------------------------

    def create_knowledge_base(self, name: str) -> UUID:
        name = name.strip()
        if not name:
            raise InvalidArgument("a knowledge base needs a non-empty name", field="name")
        kb = KnowledgeBase._create(KnowledgeBase.Created, name=name, timestamp=self.clock.now())
        self.save(kb)
        self._known_knowledge_bases.add(kb.id)
        return kb.id

    def add_article(
        self, knowledge_base_id: UUID | str, title: str, content: str, *, publish: bool = False
    ) -> UUID:
        """Draft an article (and publish it at once if asked); returns its id."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        title = _require_title(title)
        article = Article.draft(kb, title, content, at=next_timestamp(self.clock, None))
        if publish:
            article.publish(at=next_timestamp(self.clock, article.updated_at))
        self.save(article)
        return article.id

    def add_articles(
        self, knowledge_base_id: UUID | str, drafts: Iterable[tuple[str, str]], *, publish: bool
    ) -> list[UUID]:
        """Draft many articles in one transaction (imports and simulations)."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        batch: list[Article] = []
        for title, content in drafts:
            article = Article.draft(
                kb, _require_title(title), content, at=next_timestamp(self.clock, None)
            )
            if publish:
                article.publish(at=next_timestamp(self.clock, article.updated_at))
            batch.append(article)
        self.save(*batch)
        return [article.id for article in batch]

    def publish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        article = self.article_for_person(knowledge_base_id, article_id)
        article.publish(at=next_timestamp(self.clock, article.updated_at))
        return self._save_one(article)

    def unpublish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        article = self.article_for_person(knowledge_base_id, article_id)
        article.unpublish(at=next_timestamp(self.clock, article.updated_at))
        return self._save_one(article)

    def save_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        content: str | None = None,
        title: str | None = None,
    ) -> int | None:
        """A person's save, last writer wins: one `Saved` or `Retitled` event, and its
        sequence; None when the save would change nothing (the article decides), so nothing
        was written."""
        article = self.article_for_person(knowledge_base_id, article_id)
        if content is None and title is None:
            raise InvalidArgument("nothing to save: give new content, a new title, or both")
        if title is not None:
            title = _require_title(title)
        if not article.save(
            article.content if content is None else content,
            title,
            at=next_timestamp(self.clock, article.updated_at),
        ):
            return None
        return self._save_one(article)

    def _get(self, aggregate_id: UUID, kind: type[A]) -> A | None:
        """The aggregate if there is one of this kind: knowledge bases, articles and edit
        receipts share one id space in the log, so an id of another kind is not found."""
        try:
            found = self.repository.get(aggregate_id, projector_func=project_unchecked)
        except AggregateNotFoundError:
            return None
        return found if isinstance(found, kind) else None

    def get_article(self, article_id: UUID | str) -> Article:
        article = self._get(require_id(article_id, "article_id"), Article)
        if article is None:
            raise NotFound(f"no article {article_id}")
        return article

    def _save_one(self, article: Article) -> int:
        recordings = self.save(article)
        return recordings[-1].notification.id

    def article_for_person(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> Article:
        """The article, drafts and unpublished ones included; `not_found` if it is not in
        that knowledge base."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        article = self.get_article(article_id)
        if article.knowledge_base_id != kb:
            raise ArticleElsewhere(article_id, kb)
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

    # The agents' queries and edit ------------------------------------------------------------

    def search(self, knowledge_base_id: UUID, query: str, limit: int) -> list[Hit]:
        """Current published articles matching `query` (plain words), best first."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        self.catch_up()
        expression = search_index.match_expression(query)
        if expression is None:
            return []
        return [
            Hit(row["article_id"], row["title"], row["snippet"], row["updated_at"])
            for row in self.views.search(str(kb), expression, limit)
        ]

    def read_article(self, knowledge_base_id: UUID, article_id: UUID | str) -> CurrentArticle:
        """The published article as it stands now. `ArticleNotFound` for an unknown id, a
        draft or another knowledge base's article; `ArticleUnpublished` once unpublished."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        self.catch_up()
        parsed = parse_id(article_id)
        row = self.views.article(str(parsed)) if parsed else None
        if row is None or row["knowledge_base_id"] != str(kb) or row["status"] == "draft":
            raise ArticleNotFound(article_id)
        if row["status"] == "unpublished":
            raise ArticleUnpublished(article_id, row["updated_at"])
        return CurrentArticle(row["article_id"], row["title"], row["content"], row["updated_at"])

    def edit_article(
        self,
        knowledge_base_id: UUID,
        article_id: UUID | str,
        content: str,
        *,
        expected_version: datetime,
        idempotency_key: str,
        title: str | None = None,
    ) -> Edited:
        """An agent's edit: applied only if the article is still at `expected_version`, and
        at most once per `idempotency_key` (a retry answers the first result, as a replay).
        The limits and the title rule are checked first, so a refused edit never depends on
        the article's state."""
        require_idempotency_key(idempotency_key)
        require_content(content)
        if title is not None:
            require_title(title)
        kb = self._knowledge_base_uuid(knowledge_base_id)
        parsed = parse_id(article_id)
        if parsed is None:
            raise ArticleNotFound(article_id)
        fingerprint = edit_fingerprint(parsed, content, title, expected_version)
        # The idempotency key is looked up only where it can matter: before any refusal, and
        # when the receipt's insert collides with an earlier one (a used key always collides:
        # its receipt has one id and one version). So an accepted edit costs one read, the
        # article's fast-forward, and one write; every answer is the one a lookup up front
        # would give.
        try:
            article = self._editable_article(kb, parsed, article_id)
        except (NotFound, Gone):
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            raise
        if article.updated_at != expected_version:
            # A retry of an edit that was accepted (here or in another process) is a replay.
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            raise _version_conflict(article, expected_version)
        # A save that changes nothing emits no article event (the article decides), so the
        # version stays; the receipt is recorded all the same, so a retry replays this answer
        # and the key stays bound to this request.
        if article.save(content, title, at=next_timestamp(self.clock, article.updated_at)):
            at = article.updated_at
        else:
            at = next_timestamp(self.clock, None)
        receipt = EditReceipt.record(
            knowledge_base_id=kb,
            idempotency_key=idempotency_key,
            article_id=article.id,
            fingerprint=fingerprint,
            title=article.title,
            updated_at=article.updated_at,
            at=at,
        )
        try:
            self.save(article, receipt)
        except IntegrityError:
            # Another writer got there first: either the same key (a concurrent replay) or
            # another change to this article version.
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            current = self._editable_article(kb, parsed, article_id)
            raise _version_conflict(current, expected_version) from None
        return Edited(kb, article.id, article.title, article.updated_at, replay=False)

    def feed_page(self, kb: UUID, after: int, limit: int) -> tuple[list[FeedEvent], int]:
        """Up to `limit` events of the knowledge base's feed after sequence `after`, and the
        log's head, read in one snapshot. Only each event's class and timestamp are decoded:
        the feed reports no content."""
        rows, head = self.feed.select_feed_rows(kb.hex, after, limit)
        decode_stamp = self.mapper.decode_stamp
        events: list[FeedEvent] = []
        for nid, article_id, version, topic, state in rows:
            stamp = decode_stamp(topic, state)
            if stamp is None:  # an upcast event: the mapper's full path
                event = full_decode(self.mapper, (nid, article_id, version, topic, state))
                stamp = (type(event), event.timestamp)
            events.append(
                FeedEvent(nid, EVENT_TYPES[stamp[0]], article_id, timestamp_text(stamp[1]))
            )
        return events, head

    def _replay(self, kb: UUID, key: str, fingerprint: str) -> Edited | None:
        receipt = self._get(receipt_id(kb, key), EditReceipt)
        if receipt is None:
            return None
        if receipt.fingerprint != fingerprint:
            raise KeyReused(key, receipt.article_id)
        return Edited(kb, receipt.article_id, receipt.title, receipt.updated_at, replay=True)

    def _editable_article(self, kb: UUID, article_id: UUID, raw_id: UUID | str) -> Article:
        article = self._get(article_id, Article)
        if article is None or article.knowledge_base_id != kb or not article.ever_published:
            raise ArticleNotFound(raw_id)
        if not article.published:
            raise ArticleUnpublished(raw_id, format_timestamp(article.updated_at))
        return article


def feed_entries(events: Sequence[Any], aggregates: dict[Any, Any]) -> list[str | None]:
    """For each event about to be stored, the knowledge base whose feed shows it, or None.

    Agents see publishing, unpublishing, and saves of published articles; never drafts. Walk
    the batch backwards from each article's final state to know whether it was published when
    each save happened."""
    published = {aid: agg.published for aid, agg in aggregates.items() if isinstance(agg, Article)}
    entries: list[str | None] = [None] * len(events)
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if not isinstance(event, Article.Event) or isinstance(event, Article.Drafted):
            continue
        aid = event.originator_id
        if isinstance(event, Article.Published):
            visible, published[aid] = True, False
        elif isinstance(event, Article.Unpublished):
            visible, published[aid] = True, True
        else:
            visible = published[aid]
        if visible:
            entries[i] = event.knowledge_base_id.hex
    return entries


def _version_conflict(article: Article, expected: datetime) -> ArticleChanged:
    return ArticleChanged(
        article.id, format_timestamp(article.updated_at), format_timestamp(expected)
    )


def _require_title(title: str) -> str:
    """A person's title without the spaces around it; the aggregate applies the title rule."""
    return title.strip()


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    clock: Clock | None = None,
    synchronous: str | None = None,
    views: str | os.PathLike[str] | None = None,
) -> KnowledgeBaseStore:
    """Open (creating if needed) the store at `db`: a SQLite file path, default `KBES_DB` or
    `./kbes.sqlite`. `synchronous="OFF"` is for throwaway databases only: a power cut may lose
    acknowledged writes. A `postgresql://user:pass@host:port/dbname` URL puts the log in
    PostgreSQL and this process's views in the local SQLite file `views` (default `KBES_VIEWS`
    or a cache file; see kbes.postgres). A write waits KBES_LOCK_TIMEOUT seconds (default 30)
    for another process's write lock, then fails as `busy` (kbes.errors.Busy)."""
    path = os.fspath(db) if db is not None else os.environ.get("KBES_DB", "kbes.sqlite")
    if path.lower().startswith(("postgresql://", "postgres://")):
        from kbes.postgres import postgres_env  # psycopg is the optional `postgres` extra

        return KnowledgeBaseStore(postgres_env(path, views=views), clock=clock)
    env = {"SQLITE_DBNAME": path, "SQLITE_LOCK_TIMEOUT": str(lock_timeout())}
    if synchronous:
        env["KBES_SQLITE_SYNCHRONOUS"] = synchronous
    return KnowledgeBaseStore(env, clock=clock)


__all__ = ["InvalidState", "KnowledgeBaseStore", "open_store"]
