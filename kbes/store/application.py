"""The kbes application: people's commands, the agents' queries and edit, over one event log.

It speaks in domain terms (ids, text, instants; domain results and errors): the agent contract
in `kbes.tools` and the CLI each turn those into their own answers and words. Callers outside
the store room use its methods only, never its views, recorder or repository.

Its parts live in modules named for them: what they share (kbes.store.core), people's commands
(kbes.store.commands), the agents' edit (kbes.store.edit), the queries of the views and the feed
(kbes.store.queries) and the reads of the log's past (kbes.store.log_reads). Every write goes
through `save`, so an article's event, its edit receipt and its feed-index row commit together
or not at all. Reads answer from the projections, which are brought up to the head of the log
first, so a read after any write (from any process) sees it."""

from __future__ import annotations

import os
from typing import Any, ClassVar, cast
from uuid import UUID

from eventsourcing.utils import get_topic

from kbes.domain.article import Article
from kbes.domain.clock import Clock, SystemClock
from kbes.domain.errors import InvalidState
from kbes.projections.embedder import Embedder, require
from kbes.projections.views import Views
from kbes.store.commands import PeopleCommands
from kbes.store.edit import AgentEdit
from kbes.store.hybrid import HybridSearch
from kbes.store.internals import project_unchecked
from kbes.store.log_reads import LogReads
from kbes.store.mapper import MsgspecMapper
from kbes.store.queries import Queries
from kbes.store.settings import SYNCHRONOUS_ENV, Settings, is_postgres_url
from kbes.store.sqlite import KbesSQLiteFactory, ViewsHome


class KnowledgeBaseStore(HybridSearch, PeopleCommands, AgentEdit, Queries, LogReads):
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
        settings: Settings | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """`env` is eventsourcing's (open_store makes it from `settings`); `settings`, by
        default kbes's, gives the limits this store applies and its tools advertise;
        `embedder`, by default the semantic extra's model, what hybrid search embeds with."""
        self.settings = settings or Settings()
        self.embedder = embedder
        super().__init__(env)
        self.clock: Clock = clock or SystemClock()
        self._known_knowledge_bases: set[UUID] = set()
        # With a PostgreSQL log the views stay in a local SQLite file (kbes.store.postgres).
        factory = cast(ViewsHome, self.factory)
        self.views = Views(
            factory.views_datastore, application_name=self.name, source=(self.feed, self.mapper)
        )
        self.views.create_table()
        if self.settings.search == "hybrid" and embedder is None:
            require()  # SemanticUnavailable as the store opens; the model loads at first use

    mapper: MsgspecMapper

    def construct_mapper(self) -> MsgspecMapper:
        return MsgspecMapper()


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
