"""`resources/subscribe` and `resources/unsubscribe` for handshake-era sessions (2025-11-25 and
before), which have no `subscriptions/listen`: the log tail of `kbes.server.push` and its rules,
each ring sent on the session's standalone channel (`send_resource_updated`, as the SDK
documents for those clients).

A session is named by its `Mcp-Session-Id` over HTTP (by the `initialize` params the SDK keeps
once per connection over stdio, where the process serves one session), and its subscriptions
are dropped when it ends: `end_session`, which the HTTP session guard
(`kbes.server.http_sessions`) calls at DELETE, expiry or a 404. Sending to a closed session
does not raise, so waiting for a failed ring would keep them for ever (issue 18, defect 3).
One session holds at most `limit` subscriptions, and all of them share one handle on the
session rather than one per subscribe request."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError

from kbes.server.push import LogTail, granted_routes, knowledge_base_of
from kbes.server.serve_limits import DEFAULT_MAX_SUBSCRIPTIONS
from kbes.server.standing import GrantsNow, Revoked, Standing, may_hear, snapshot
from kbes.tools.grants import Grants
from kbes.tools.refusals import too_many_subscriptions

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"


@dataclass
class _Session:
    channel: Any
    """A `ServerSession` of the session (any one: rings go on the connection's standalone
    channel)."""
    grants_now: GrantsNow
    """The caller's grants at each ring (kbes.server.standing)."""
    uris: dict[str, tuple[str, Callable[[], None]]] = field(default_factory=dict)
    """URI as the client spelled it -> (its canonical URI, the tail watch's release)."""


class LegacySubscriptions:
    """The two handlers, and `end_session` for the transport to call when a session ends."""

    def __init__(
        self,
        tail: LogTail,
        grants: Callable[[], Grants],
        *,
        limit: int = DEFAULT_MAX_SUBSCRIPTIONS,
        standing: Standing | None = None,
    ) -> None:
        self.tail = tail
        self.grants = grants
        self.standing = snapshot(grants) if standing is None else standing
        self.limit = limit
        self._sessions: dict[str, _Session] = {}
        self._unhook: Callable[[], None] | None = None

    @property
    def count(self) -> int:
        """Subscriptions held, over every session."""
        return sum(len(s.uris) for s in self._sessions.values())

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = params.uri
        key = session_key(ctx)
        session = self._sessions.get(key)
        routes = granted_routes([uri], self.grants())
        if (session is not None and uri in session.uris) or not routes:
            # Already subscribed; or a URI this caller may not see, acknowledged as any other.
            return types.EmptyResult()
        if session is not None and len(session.uris) >= self.limit:
            raise MCPError(types.INVALID_REQUEST, too_many_subscriptions(self.limit))
        canonical = next(iter(routes))
        release = await self.tail.watch([knowledge_base_of(canonical)])
        session = self._sessions.get(key)
        if session is None:  # the standing of the session's caller, taken in its request
            session = self._sessions[key] = _Session(ctx.session, self.standing())
        if uri in session.uris or len(session.uris) >= self.limit:
            release()  # subscribed meanwhile, by another request of the same session
            if uri in session.uris:
                return types.EmptyResult()
            raise MCPError(types.INVALID_REQUEST, too_many_subscriptions(self.limit))
        session.uris[uri] = (canonical, release)
        if self._unhook is None:
            self._unhook = self.tail.bus.subscribe(self._ring)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        key = session_key(ctx)
        session = self._sessions.get(key)
        if session is not None:
            held = session.uris.pop(params.uri, None)
            if held is not None:
                held[1]()
            if not session.uris:
                del self._sessions[key]
        return types.EmptyResult()

    def end_session(self, session_id: str) -> None:
        """Drop every subscription of a session that has ended."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        logger.debug("dropping the %d subscription(s) of ended session", len(session.uris))
        for _canonical, release in session.uris.values():
            release()

    def _ring(self, event: ServerEvent) -> None:
        if not isinstance(event, ResourceUpdated) or self.tail.tasks is None:
            return
        for key, session in list(self._sessions.items()):
            rung = [uri for uri, (canonical, _) in session.uris.items() if canonical == event.uri]
            if not rung:
                continue
            grants = session.grants_now()
            if isinstance(grants, Revoked):
                logger.info("the token of a session was revoked: its subscriptions end")
                self.end_session(key)
            elif may_hear(knowledge_base_of(event.uri), grants):
                for uri in rung:
                    self.tail.tasks.start_soon(self._send, key, session, uri)

    async def _send(self, key: str, session: _Session, uri: str) -> None:
        try:
            await session.channel.send_resource_updated(uri)
        except Exception:  # the session is gone: nobody to ring any more
            logger.debug("dropping the subscriptions of a closed session")
            if self._sessions.get(key) is session:
                self.end_session(key)


def session_key(ctx: ServerRequestContext[Any]) -> str:
    """The HTTP session's id; over stdio, the one connection's."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    session_id = headers.get(SESSION_HEADER) if headers is not None else None
    return session_id or f"connection-{id(ctx.session.client_params)}"
