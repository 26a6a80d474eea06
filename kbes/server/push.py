"""Push on change: a doorbell that rings `notifications/resources/updated` for the current
article URIs (and knowledge-base URIs) a client listens to, whichever process wrote the event.

The log is the only channel every writer shares (another `kbes serve`, `kbes article save` in a
terminal, another machine on PostgreSQL), so the server tails it: while at least one listener
is open, it reads the log's head every `interval` seconds (one indexed query), and only when the
head moved does it read the new events of the knowledge bases someone listens to, from the same
per-knowledge-base feed `poll_resource_events` reads, so drafts never ring. With no listener the
tail sleeps and queries nothing. The same tail serves SQLite and PostgreSQL.

It is a doorbell, not a mailbox: nothing is replayed after a dropped stream, and a listener
hears of changes after its acknowledgment only. The durable path stays `poll_resource_events`
from the client's stored cursor; see docs/resources.md."""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from uuid import UUID

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourceUpdated,
    ServerEvent,
)
from mcp.shared.exceptions import MCPError

from kbes.server.capabilities import honored
from kbes.server.resources import article_uri, canonical_uri, knowledge_base_uri, parse_uri
from kbes.server.standing import GrantsNow, Revoked, Standing, may_hear
from kbes.store.application import KnowledgeBaseStore
from kbes.tools.codes import NotFound
from kbes.tools.grants import Grants, admit

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL = 0.2
"""Seconds between two looks at the log's head while someone listens."""
PAGE = 100
MAX_LISTENERS = 1024


class LogTail:
    """Publishes `ResourceUpdated` on `bus` for each new feed event of a watched knowledge base
    (its article's URI and the knowledge base's URI), polling only while something is watched."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        *,
        interval: float = DEFAULT_INTERVAL,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.store = store
        self.interval = interval
        self.limiter = limiter
        self.bus = InMemorySubscriptionBus()
        self._watchers: Counter[str] = Counter()
        self._cursors: dict[str, int] = {}
        self._wake = anyio.Event()
        self.tasks: anyio.abc.TaskGroup | None = None
        """Where sends outliving a request run (set by `tail_lifespan`)."""
        self.queries = 0
        """Statements sent to the log so far (the idle cost a bench reports)."""

    async def watch(self, knowledge_bases: Iterable[str]) -> Callable[[], None]:
        """Count a listener on these knowledge bases (canonical ids) from now on; returns the
        release. A knowledge base newly watched starts at the log's head: no replay."""
        kbs = list(dict.fromkeys(knowledge_bases))
        fresh = [kb for kb in kbs if not self._watchers[kb]]
        if fresh:
            head = await self._thread(self._head)
            for kb in fresh:
                self._cursors.setdefault(kb, head)
        for kb in kbs:
            self._watchers[kb] += 1
        self._wake.set()
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            for kb in kbs:
                self._watchers[kb] -= 1
                if self._watchers[kb] <= 0:
                    del self._watchers[kb]
                    self._cursors.pop(kb, None)

        return release

    async def run(self) -> None:
        """Tail until cancelled (the server's lifespan). Each stretch of listening ends with one
        log line of what it cost the database, the figure `kbes bench` reports."""
        since: tuple[float, int] | None = None
        while True:
            if not self._watchers:
                if since is not None:
                    seconds, statements = time.monotonic() - since[0], self.queries - since[1]
                    logger.info(
                        "push: no listener left after %.1f s; the tail sent %d statements to "
                        "the log (%.2f/s)",
                        seconds,
                        statements,
                        statements / seconds if seconds else 0.0,
                    )
                    since = None
                self._wake = anyio.Event()
                await self._wake.wait()
                since = (time.monotonic(), self.queries)
                continue
            await anyio.sleep(self.interval)
            cursors = {kb: self._cursors[kb] for kb in self._watchers if kb in self._cursors}
            try:
                uris, moved = await self._thread(self._changes, cursors)
            except Exception:  # a lost connection must not end push for good: try next tick
                logger.exception("reading the log for push notifications failed; retrying")
                continue
            for kb, cursor in moved.items():
                if kb in self._cursors:
                    self._cursors[kb] = max(self._cursors[kb], cursor)
            for uri in uris:
                await self.bus.publish(ResourceUpdated(uri=uri))

    def _head(self) -> int:
        self.queries += 1
        return self.store.head()

    def _changes(self, cursors: dict[str, int]) -> tuple[list[str], dict[str, int]]:
        """The URIs that changed since each cursor, and the cursors after them. One query when
        nothing moved; one page per watched knowledge base when the head moved."""
        head = self._head()
        uris: dict[str, None] = {}
        moved: dict[str, int] = {}
        for kb, cursor in cursors.items():
            if cursor >= head:
                continue
            while True:
                self.queries += 1
                page = self.store.feed_page(UUID(kb), cursor, PAGE)
                for event in page.events:
                    uris[article_uri(kb, event.article_id)] = None
                    uris[knowledge_base_uri(kb)] = None
                cursor = max(cursor, page.next_sequence)
                if not page.has_more:
                    break
            moved[kb] = cursor
        return list(uris), moved

    async def _thread(self, function: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args), limiter=self.limiter
        )


class Listen:
    """The `subscriptions/listen` handler: the SDK's `ListenHandler` over a view of the tail's
    bus that carries only the caller's granted, current URIs, under the spelling it asked for.
    A URI it may not see is acknowledged like any other and simply never rings, exactly as one
    that names nothing; a list-changed kind is not acknowledged, as kbes sends none. The
    caller's grants are asked again before each ring (`standing`): a narrowed token hears only
    what it may touch now, and a revoked one's stream ends at the next change."""

    def __init__(self, tail: LogTail, grants: Callable[[], Grants], standing: Standing) -> None:
        self.tail = tail
        self.grants = grants
        self.standing = standing
        self._open = 0

    async def __call__(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        routes = granted_routes(params.notifications.resource_subscriptions or (), self.grants())
        if self._open >= MAX_LISTENERS:
            raise MCPError(types.INTERNAL_ERROR, "Subscription limit reached")
        release = await self.tail.watch(knowledge_base_of(uri) for uri in routes)
        self._open += 1
        try:
            handler = ListenHandler(
                RoutedBus(self.tail.bus, routes, self.standing(), lambda: handler.close())
            )
            narrowed = params.model_copy(update={"notifications": honored(params.notifications)})
            return await handler(ctx, narrowed)
        finally:
            self._open -= 1
            release()


def granted_routes(requested: Iterable[str], grants: Grants) -> dict[str, list[str]]:
    """Canonical current URI -> the spellings the client asked for, for the URIs whose
    knowledge base the caller may touch."""
    routes: dict[str, list[str]] = {}
    for uri in requested:
        canonical = canonical_uri(uri)
        if canonical is None:
            continue
        try:
            admit(knowledge_base_of(canonical), grants)  # the tools' one grant check
        except NotFound:
            continue
        routes.setdefault(canonical, []).append(uri)
    return routes


def knowledge_base_of(uri: str) -> str:
    return parse_uri(uri).knowledge_base_id


class RoutedBus:
    """A view of a bus for one listen stream: canonical URIs in, the client's spellings out,
    everything else dropped before the SDK's own filter sees it, and so is every ring its
    caller may no longer hear (`grants_now`); the first ring after the caller's token is
    revoked calls `revoked` instead (which ends the stream)."""

    def __init__(
        self,
        bus: InMemorySubscriptionBus,
        routes: dict[str, list[str]],
        grants_now: GrantsNow,
        revoked: Callable[[], None],
    ) -> None:
        self._bus = bus
        self._routes = routes
        self._grants_now = grants_now
        self._revoked = revoked

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        routes = self._routes

        def routed(event: ServerEvent) -> None:
            if not isinstance(event, ResourceUpdated) or event.uri not in routes:
                return
            grants = self._grants_now()
            if isinstance(grants, Revoked):
                self._revoked()
            elif may_hear(knowledge_base_of(event.uri), grants):
                for spelling in routes[event.uri]:
                    listener(ResourceUpdated(uri=spelling))

        return self._bus.subscribe(routed)


def tail_lifespan(tail: LogTail) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """A lowlevel `Server` lifespan that runs the tail for as long as the server serves."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tasks:
            tail.tasks = tasks
            tasks.start_soon(tail.run)
            try:
                yield {}
            finally:
                tail.tasks = None
                tasks.cancel_scope.cancel()

    return lifespan
