"""The kbes store: people's commands, the agents' queries and edit, over one event log.

It speaks in domain terms (ids, text, instants; domain results and errors): the agent contract
in `kbes.tools` and the CLI each turn those into their own answers and words. Callers outside
the store room use its methods only, never its parts.

`KnowledgeBaseStore` holds its parts and names them; each method hands its call to one of them:

- `log` (kbes.store.event_log): the one eventsourcing `Application`, which every write goes
  through (`save`), so an article's event, its edit receipt and its feed-index row commit
  together or not at all;
- `views` (kbes.projections.views): the read models, folded from the log;
- `known` (kbes.store.knowledge_bases): which knowledge bases exist;
- `people` (kbes.store.commands) and `agent` (kbes.store.edit): the two kinds of write;
- `queries` (kbes.store.queries): the reads of the views and of the feed, the keyword search
  among them, each brought up to the head of the log first, so a read after any write (from
  any process) sees it;
- `hybrid` (kbes.store.hybrid): the vectors, and the search by words and meaning;
- `embedding` (kbes.store.embedding): the thread embedding the backlog, when one runs;
- `searcher`: whichever of `queries` and `hybrid` the settings chose at open time;
- `past` (kbes.store.log_reads): the reads of the log's past."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.persistence import Recording
from eventsourcing.utils import get_topic

from kbes.domain.article import Article
from kbes.domain.author import Author
from kbes.domain.clock import Clock, SystemClock
from kbes.domain.errors import InvalidState
from kbes.domain.folder_source import FolderSource, source_id
from kbes.domain.limits import Limits
from kbes.projections.embedder import Embedder, require
from kbes.projections.views import Views
from kbes.store.commands import PeopleCommands
from kbes.store.edit import AgentEdit
from kbes.store.embedding import BackgroundEmbedding
from kbes.store.embedding import Progress as EmbeddingProgress
from kbes.store.event_log import EventLog
from kbes.store.hybrid import HybridSearch
from kbes.store.keeping_up import Effort, KeepingUp
from kbes.store.knowledge_bases import KnownKnowledgeBases
from kbes.store.log_reads import LogReads
from kbes.store.queries import Queries
from kbes.store.results import (
    ArticleSummary,
    CurrentArticle,
    Edited,
    FeedPage,
    Hit,
    KnowledgeBaseInfo,
    KnowledgeBaseSummary,
    LoggedEvent,
    VersionHistory,
)
from kbes.store.settings import SYNCHRONOUS_ENV, Settings, is_postgres_url
from kbes.store.sqlite import KbesSQLiteFactory

R = TypeVar("R")


class KnowledgeBaseStore:
    """An event-sourced knowledge-base store."""

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        clock: Clock | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """`env` is eventsourcing's (open_store makes it from `settings`); `settings`, by
        default kbes's, gives the limits this store applies and its tools advertise;
        `embedder`, by default the semantic extra's model, what hybrid search embeds with."""
        self.settings = settings or Settings()
        self.clock: Clock = clock or SystemClock()
        self.log = EventLog(env)
        # With a PostgreSQL log the views stay in a local SQLite file (kbes.store.postgres).
        self.views = Views(
            self.log.views_datastore,
            application_name=self.log.name,
            source=(self.log.feed, self.log.mapper),
            keyword_folder_from=self.settings.keyword_folder_from,
        )
        self.views.create_table()
        self.known = known = KnownKnowledgeBases(self.log)
        limits = self.settings.limits
        self.people = PeopleCommands(self.log, known, self.clock, limits)
        self.agent = AgentEdit(self.log, known, self.clock, limits)
        self.queries = Queries(self.log, self.views, known)
        self.past = LogReads(self.log, self.views)
        self.hybrid = HybridSearch(
            self.queries,
            self.log,
            self.views,
            known,
            embedder=embedder,
            hnsw_threshold=self.settings.hnsw_threshold,
        )
        self.embedding: BackgroundEmbedding | None = None
        self.keeping_up: KeepingUp | None = None
        self.searcher: Queries | HybridSearch = self.queries
        if self.settings.search == "hybrid":
            if embedder is None:
                require()  # SemanticUnavailable as the store opens; the model loads at first use
            self.searcher = self.hybrid

    @property
    def limits(self) -> Limits:
        """What an article may hold here: every door's check and the tools' schemas."""
        return self.settings.limits

    def close(self) -> None:
        """Stop the background threads if any, then close the log's and the views'
        connections."""
        if self.keeping_up is not None:
            self.keeping_up.stop()
            self.keeping_up = None
        if self.embedding is not None:
            self.embedding.stop()
            self.embedding = None
        self.log.close()

    # The agents' tools -------------------------------------------------------------------------

    def search(self, knowledge_base_id: UUID | str, query: str, limit: int) -> list[Hit]:
        """Current published articles matching `query`, best first: by words, or by words and
        meaning (`Settings.search`)."""
        return self.searcher.search(knowledge_base_id, query, limit)

    def read_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> CurrentArticle:
        """The published article as it stands now (kbes.store.queries)."""
        return self.queries.read_article(knowledge_base_id, article_id)

    def edit_article(
        self,
        knowledge_base_id: UUID,
        article_id: UUID | str,
        content: str,
        *,
        expected_version: datetime,
        idempotency_key: str,
        title: str | None = None,
        by: Author | None = None,
    ) -> Edited:
        """An agent's edit: applied only if the article is still at `expected_version`, at
        most once per `idempotency_key`; its events' author is `by` (kbes.store.edit)."""
        return self.agent.edit_article(
            knowledge_base_id,
            article_id,
            content,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
            title=title,
            by=by,
        )

    def article_to_edit(self, knowledge_base_id: UUID, article_id: UUID | str) -> CurrentArticle:
        """The published article an edit would replace, from the log (kbes.store.edit)."""
        return self.agent.article_to_edit(knowledge_base_id, article_id)

    def feed_page(self, kb: UUID, after: int, limit: int) -> FeedPage:
        """One page of the knowledge base's feed after sequence `after` (kbes.store.queries)."""
        return self.queries.feed_page(kb, after, limit)

    def feed_authors(self, kb: UUID, after: int, limit: int) -> dict[int, Author | None]:
        """Who wrote each event of that feed page, by sequence, for people (kbes.store.queries):
        the agents' poll reports no author."""
        return self.queries.feed_authors(kb, after, limit)

    # People's commands -------------------------------------------------------------------------

    # Each takes `by`, the person its events record as their author (default: `KBES_AUTHOR`,
    # else the operating-system user: kbes.domain.author.person_running).

    def create_knowledge_base(self, name: str, *, by: Author | None = None) -> UUID:
        """A new knowledge base (kbes.store.commands)."""
        return self.people.create_knowledge_base(name, by=by)

    def add_article(
        self,
        knowledge_base_id: UUID | str,
        title: str,
        content: str,
        *,
        publish: bool = False,
        by: Author | None = None,
    ) -> UUID:
        """Draft an article (and publish it at once if asked); returns its id."""
        return self.people.add_article(knowledge_base_id, title, content, publish=publish, by=by)

    def add_articles(
        self,
        knowledge_base_id: UUID | str,
        drafts: Iterable[tuple[str, str]],
        *,
        publish: bool,
        by: Author | None = None,
    ) -> list[UUID]:
        """Draft many articles in one transaction (imports and simulations)."""
        return self.people.add_articles(knowledge_base_id, drafts, publish=publish, by=by)

    def publish_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int:
        """Publish; with `expected_version`, only at that version (kbes.store.commands)."""
        return self.people.publish_article(
            knowledge_base_id, article_id, by=by, expected_version=expected_version
        )

    def unpublish_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int:
        """Unpublish; with `expected_version`, only at that version (kbes.store.commands)."""
        return self.people.unpublish_article(
            knowledge_base_id, article_id, by=by, expected_version=expected_version
        )

    def save_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        content: str | None = None,
        title: str | None = None,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int | None:
        """A person's save, last writer wins, or with `expected_version` a compare-and-swap
        (kbes.store.commands)."""
        return self.people.save_article(
            knowledge_base_id,
            article_id,
            content=content,
            title=title,
            by=by,
            expected_version=expected_version,
        )

    def last_writer_wins(self, write: Callable[[], R], article_id: object = None) -> R:
        """Run `write` until no other process wrote its articles in between
        (kbes.store.commands)."""
        return self.people.last_writer_wins(write, article_id)

    def article_for_person(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> Article:
        """The article, drafts and unpublished ones included; `not_found` if it is not in
        that knowledge base."""
        return self.people.article_for_person(knowledge_base_id, article_id)

    def get_article(self, article_id: UUID | str) -> Article:
        """The article aggregate as it stands now, drafts included; `not_found` if none."""
        return self.people.get_article(article_id)

    def folder_source(self, knowledge_base_id: UUID, name: str) -> FolderSource | None:
        """The record of the folder `name` imported into the knowledge base, as the log holds
        it now; None before its first import."""
        return self.log.get(source_id(knowledge_base_id, name), FolderSource)

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Save aggregates as they are, in one transaction (imports, simulations)."""
        return self.log.save(*objs, **kwargs)

    # Listings, as the views stand (kbes.store.queries) ---------------------------------------

    def require_knowledge_base(self, knowledge_base_id: UUID | str) -> UUID:
        """The knowledge base's UUID; `not_found` if there is no such knowledge base."""
        return self.known.require(knowledge_base_id)

    def knowledge_base(self, knowledge_base_id: UUID | str) -> KnowledgeBaseInfo | None:
        return self.queries.knowledge_base(knowledge_base_id)

    def knowledge_bases(self) -> list[KnowledgeBaseSummary]:
        return self.queries.knowledge_bases()

    def knowledge_bases_named(self, name: str) -> list[str]:
        return self.queries.knowledge_bases_named(name)

    def articles(self, knowledge_base_id: UUID | str) -> list[ArticleSummary]:
        return self.queries.articles(knowledge_base_id)

    # The log's past (kbes.store.log_reads) ------------------------------------------------------

    def head(self) -> int:
        """The head of the log: the notification id of its last event, 0 when it is empty."""
        return self.log.head()

    def version_history(self, article_id: UUID) -> VersionHistory | None:
        return self.past.version_history(article_id)

    def article_authors(self, article_id: UUID, after: int = 0) -> dict[int, Author | None]:
        """Each version's author after version `after`, from the log (kbes.store.log_reads)."""
        return self.past.article_authors(article_id, after)

    def article_at_version(self, article_id: UUID, version: int) -> Article:
        return self.past.article_at_version(article_id, version)

    def logged_events(self, after: int = 0, *, limit: int | None = None) -> Iterator[LoggedEvent]:
        return self.past.logged_events(after, limit=limit)

    # The views and the vectors --------------------------------------------------------------

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Bring the views to the head of the log; one cheap query when already there."""
        return self.queries.catch_up(progress)

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Replay the whole log into the views, invisibly to readers (Views.rebuild)."""
        return self.views.rebuild(self.log.feed, self.log.mapper, progress)

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every published article the model has not embedded yet (kbes.store.hybrid)."""
        return self.hybrid.embed_pending(progress)

    def pending_embeddings(self) -> int:
        """How many published texts the model has not embedded yet (kbes.store.hybrid)."""
        return self.hybrid.pending_embeddings()

    def embed_in_background(
        self, report: Callable[[EmbeddingProgress], None] | None = None
    ) -> BackgroundEmbedding:
        """Start a thread that embeds the backlog and then new saves until the store closes
        (kbes.store.embedding); `report` receives its progress."""
        if self.embedding is None:
            self.embedding = BackgroundEmbedding(self.hybrid, report).start()
        return self.embedding

    def keep_up_in_background(self) -> KeepingUp:
        """Start a thread that catches the views and the keyword indexes this process holds up
        as the log moves, until the store closes (kbes.store.keeping_up): a server's searches
        then seldom pay for another process's save."""
        if self.keeping_up is None:
            self.keeping_up = KeepingUp(self.queries, self.views).start()
        return self.keeping_up

    def background_effort(self) -> Effort | None:
        """What the background catch-up has done, or None if it was never started."""
        return None if self.keeping_up is None else self.keeping_up.effort()

    def embedding_coverage(self, knowledge_base_id: UUID | str) -> tuple[int, int]:
        """(published articles with a vector, published articles) of a knowledge base."""
        return self.hybrid.coverage(knowledge_base_id)


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    clock: Clock | None = None,
    synchronous: str | None = None,
    views: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    search: str | None = None,
    embedder: Embedder | None = None,
) -> KnowledgeBaseStore:
    """Open (creating if needed) the store at `db`: a SQLite file path, default `KBES_DB` or
    `./kbes.sqlite`. `synchronous="OFF"` is for throwaway databases only: a power cut may lose
    acknowledged writes. A `postgresql://user:pass@host:port/dbname` URL puts the log in
    PostgreSQL and this process's views in the local SQLite file `views` (default `KBES_VIEWS`
    or a cache file; see kbes.store.views_file). A write waits KBES_LOCK_TIMEOUT seconds
    (default 30) for another process's write lock, then fails as `busy` (kbes.domain.errors.Busy).

    The environment is read here, once, into the store's `Settings` (kbes.store.settings),
    unless `settings` are given; the arguments given win over either. A bad value raises
    `BadSetting` naming its variable. `search="hybrid"` (or `KBES_SEARCH`) fuses the keyword
    search with the vector projection's (the `semantic` extra; else `SemanticUnavailable`),
    embedding with `embedder` if given (a simulation's), else the extra's model."""
    flags: dict[str, Any] = {"db": db, "synchronous": synchronous, "views": views, "search": search}
    settings = Settings.read(os.environ, **flags) if settings is None else settings.but(**flags)
    if is_postgres_url(settings.db):
        from kbes.store.postgres_url import postgres_env  # psycopg: the `postgres` extra

        return KnowledgeBaseStore(
            postgres_env(settings.db, settings), clock=clock, settings=settings, embedder=embedder
        )
    # eventsourcing reads the process environment over a class's `env`, so an embedding
    # application's PERSISTENCE_MODULE (or KBES_PERSISTENCE_MODULE, which its lookup tries
    # first) made kbes open with another factory (issue 35): kbes's own wiring is pinned under
    # both keys, as postgres_env pins the URL's.
    sqlite = {
        "PERSISTENCE_MODULE": get_topic(KbesSQLiteFactory),
        "SQLITE_DBNAME": settings.db,
        "SQLITE_LOCK_TIMEOUT": str(settings.lock_timeout),
    }
    env = {
        **sqlite,
        **{f"KBES_{key}": value for key, value in sqlite.items()},
        SYNCHRONOUS_ENV: settings.synchronous,
    }
    return KnowledgeBaseStore(env, clock=clock, settings=settings, embedder=embedder)


__all__ = ["InvalidState", "KnowledgeBaseStore", "open_store"]
