"""The application's queries of the views and the feed, answered as domain results
(kbes.store.results), never as the views' rows.

The agents' queries (search, read, the feed) see every write before them: they bring the views
to the head of the log first. The listings people and the server ask for read the views as they
stand, since their callers catch up once for many reads: call `catch_up` first to see every
write. `search` here is the keyword search; kbes.store.hybrid's adds the vectors to it."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from kbes.domain.article import EVENT_TYPES
from kbes.domain.author import Author
from kbes.domain.clock import timestamp_text
from kbes.domain.errors import ArticleNotFound, ArticleUnpublished
from kbes.domain.ids import parse_id
from kbes.projections.source import full_decode
from kbes.projections.views import Views
from kbes.store.event_log import EventLog
from kbes.store.knowledge_bases import KnownKnowledgeBases
from kbes.store.results import (
    ArticleSummary,
    CurrentArticle,
    FeedEvent,
    FeedPage,
    Hit,
    KnowledgeBaseInfo,
    KnowledgeBaseSummary,
)


class Queries:
    """Reads of the views and of one knowledge base's feed."""

    def __init__(self, log: EventLog, views: Views, known: KnownKnowledgeBases) -> None:
        self.log = log
        self.views = views
        self.known = known

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Bring the views to the head of the log; one cheap query when already there."""
        return self.views.catch_up(self.log.feed, self.log.mapper, progress=progress)

    # The agents' queries ---------------------------------------------------------------------

    def search(self, knowledge_base_id: UUID | str, query: str, limit: int) -> list[Hit]:
        """Current published articles matching `query` (plain words), best first."""
        kb = self.known.require(knowledge_base_id)
        self.catch_up()
        return [Hit(*hit) for hit in self.views.search(str(kb), query, limit)]

    def read_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> CurrentArticle:
        """The published article as it stands now. `ArticleNotFound` for an unknown id, a
        draft or another knowledge base's article; `ArticleUnpublished` once unpublished."""
        kb = self.known.require(knowledge_base_id)
        self.catch_up()
        parsed = parse_id(article_id)
        row = self.views.article(str(parsed)) if parsed else None
        if row is None or row["knowledge_base_id"] != str(kb) or row["status"] == "draft":
            raise ArticleNotFound(article_id)
        if row["status"] == "unpublished":
            raise ArticleUnpublished(article_id, row["updated_at"])
        return CurrentArticle(row["article_id"], row["title"], row["content"], row["updated_at"])

    def feed_page(self, kb: UUID, after: int, limit: int) -> FeedPage:
        """Up to `limit` (at least one) events of the knowledge base's feed after sequence
        `after`, the log's head read in the same snapshot, and where the next page starts
        (`FeedPage.of`). Only each event's class and timestamp are decoded: the feed reports
        no content."""
        if limit < 1:
            raise ValueError(f"a feed page holds at least one event, not {limit}")
        rows, head = self.log.feed.select_feed_rows(kb.hex, after, limit)
        decode_stamp = self.log.mapper.decode_stamp
        events: list[FeedEvent] = []
        for nid, article_id, version, topic, state in rows:
            stamp = decode_stamp(topic, state)
            if stamp is None:  # an upcast event: the mapper's full path
                event = full_decode(self.log.mapper, (nid, article_id, version, topic, state))
                stamp = (type(event), event.timestamp)
            events.append(
                FeedEvent(nid, EVENT_TYPES[stamp[0]], article_id, timestamp_text(stamp[1]))
            )
        return FeedPage.of(events, head, limit)

    def feed_authors(self, kb: UUID, after: int, limit: int) -> dict[int, Author | None]:
        """The author of each event of the same feed page (by sequence), for people: the
        agents' poll never reads them. Only the `author` field is decoded (None for an event
        written before kbes recorded authors)."""
        rows, _ = self.log.feed.select_feed_rows(kb.hex, after, limit)
        decode_author = self.log.mapper.decode_author
        return {nid: decode_author(state) for nid, _, _, _, state in rows}

    # Listings, as the views stand --------------------------------------------------------------

    def knowledge_base(self, knowledge_base_id: UUID | str) -> KnowledgeBaseInfo | None:
        """The knowledge base, or None if the views hold none by that id."""
        kb = parse_id(knowledge_base_id)
        row = None if kb is None else self.views.knowledge_base(str(kb))
        if row is None:
            return None
        return KnowledgeBaseInfo(row["knowledge_base_id"], row["name"], row["created_at"])

    def knowledge_bases(self) -> list[KnowledgeBaseSummary]:
        """Every knowledge base with its article counts, oldest first."""
        return [
            KnowledgeBaseSummary(
                r["knowledge_base_id"], r["name"], r["created_at"], r["articles"], r["published"]
            )
            for r in self.views.knowledge_bases()
        ]

    def knowledge_bases_named(self, name: str) -> list[str]:
        """The ids of the knowledge bases called `name` (blanks around it dropped, as a new
        knowledge base's name is), oldest first: a name need not be unique, so a door can warn
        before it gives a second knowledge base the same one."""
        self.catch_up()
        wanted = name.strip()
        return [kb.knowledge_base_id for kb in self.knowledge_bases() if kb.name == wanted]

    def articles(self, knowledge_base_id: UUID | str) -> list[ArticleSummary]:
        """Every article of the knowledge base, drafts and unpublished ones included, by
        title; `not_found` if there is no such knowledge base."""
        kb = self.known.require(knowledge_base_id)
        return [
            ArticleSummary(r["article_id"], r["title"], r["status"], r["version"], r["updated_at"])
            for r in self.views.articles(str(kb))
        ]


__all__ = ["Queries"]
