"""The handshake-era HTTP sessions one client may hold, and the moment each one ends.

The MCP SDK keeps a streamable HTTP session (2025-11-25 and before) until the client DELETEs it
or it has been idle for `session_idle_timeout`, up to `max_sessions` in all; past that every new
client is refused `503`, so one token holder that opens sessions and never closes them locks
everyone else out (issue 18, defect 9). And the SDK gives a handler no signal when a session
ends, so the subscriptions of a gone session stayed for ever (defect 3).

`SessionGuard` is an ASGI layer in front of the SDK's app that watches what goes over the wire,
where both are visible: a session opens when a request is answered with a new `Mcp-Session-Id`,
and ends when a DELETE of it succeeds, when a request for it is answered 404 (the SDK no longer
knows it) or when it has had no request in flight for the idle timeout (the SDK's rule, which
the SDK applies at the same moment). Each session belongs to a client, the token's NAME with
`--tokens`, else the client's address; a client holding `max_sessions_per_client` is refused
`429` with `Retry-After` for another, and everyone else is unaffected. Each end is told to
`on_end` (the handshake-era subscriptions drop theirs).

Without tokens every local client shares one address, and common clients (the TypeScript SDK's
`close()`, the conformance runner) never end their sessions, so one conformance run locked the
next out for the idle timeout (issue 35, defect 11). With `make_room`, a client at its limit
has its least recently used idle session (no request in flight, no open stream) ended, as a
DELETE of it would, to make room: it still never holds more than its limit, and only a client
whose every session is busy is refused."""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbes.server.serve_limits import ServeLimits
from kbes.tools.refusals import too_many_sessions

logger = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"

Owner = Callable[[Scope], str | None]
"""Who a request comes from ("token support-bot", "address 10.0.0.7"); None: nobody known (a
missing or wrong token, which the SDK answers 401)."""


@dataclass
class _Open:
    owner: str
    in_flight: int
    last_seen: float
    headers: list[tuple[bytes, bytes]]
    """What a DELETE of the session repeats of its opening request (Host, Origin)."""


ENDING_HEADERS = (b"host", b"origin", b"authorization")


class SessionGuard:
    """ASGI middleware bounding sessions per client and reporting each session's end."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        owner: Owner,
        limits: ServeLimits,
        on_end: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        make_room: bool = False,
    ) -> None:
        self.app = app
        self.make_room = make_room
        self.owner = owner
        self.limits = limits
        self.on_end = on_end
        self.clock = clock
        self.sessions: dict[str, _Open] = {}
        self._opening_now: Counter[str] = Counter()
        """Opening requests not yet answered, per client, counted against its limit."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = header(scope.get("headers", ()), SESSION_HEADER)
        if session_id is not None:
            await self._in_session(session_id, scope, receive, send)
        elif scope["method"] == "POST" and handshake_era(scope):
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def run(self) -> None:
        """Expire idle sessions until cancelled (the HTTP server's lifetime)."""
        period = min(5.0, self.limits.session_idle_timeout / 4)
        while True:
            await anyio.sleep(period)
            self.expire()

    def expire(self) -> None:
        """End every session idle for the timeout (the SDK has ended it too)."""
        now = self.clock()
        idle = self.limits.session_idle_timeout
        for session_id, held in list(self.sessions.items()):
            if not held.in_flight and now - held.last_seen >= idle:
                self._end(session_id)

    def held_by(self, owner: str) -> list[_Open]:
        return [held for held in self.sessions.values() if held.owner == owner]

    def _holding(self, owner: str) -> int:
        return len(self.held_by(owner)) + self._opening_now[owner]

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session id: only an `initialize` opens a session."""
        owner = self.owner(scope)
        if owner is None:
            await self.app(scope, receive, send)
            return
        limit = self.limits.max_sessions_per_client
        if self._holding(owner) >= limit:
            self.expire()
            while self.make_room and self._holding(owner) >= limit:
                if not await self._end_idlest(owner, scope):
                    break
            if self._holding(owner) >= limit:
                await self._refuse(owner, self.held_by(owner), scope, receive, send)
                return
        opened: str | None = None
        pending = True
        self._opening_now[owner] += 1

        def answered() -> None:
            nonlocal pending
            if pending:
                pending = False
                self._opening_now[owner] -= 1
                if not self._opening_now[owner]:
                    del self._opening_now[owner]

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start":
                opened = header(message.get("headers", ()), SESSION_HEADER)
                if message["status"] >= 400:
                    opened = None
                elif opened is not None and opened not in self.sessions:
                    kept = [(k, v) for k, v in scope["headers"] if k.lower() in ENDING_HEADERS]
                    self.sessions[opened] = _Open(owner, 1, self.clock(), kept)
                    logger.debug("%s opened a session", owner)
                else:
                    opened = None  # not ours to count
                answered()  # counted as a session now, or refused
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            answered()
            if opened is not None:
                self._done(opened)

    async def _in_session(
        self, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        held = self.sessions.get(session_id)
        if held is not None:
            held.in_flight += 1
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if held is not None:
                self._done(session_id)
            # The SDK answers 404 to a session it no longer knows, and to another client's
            # session as if it did not exist: only the owner's 404 says it has ended.
            gone = status == 404 and (held is None or self.owner(scope) == held.owner)
            deleted = scope["method"] == "DELETE" and status is not None and status < 300
            if gone or deleted:
                self._end(session_id)

    async def _end_idlest(self, owner: str, scope: Scope) -> bool:
        """End the owner's least recently used session with nothing in flight, by a DELETE of
        it sent through the SDK's app (so the SDK ends it too) beside the request `scope`;
        False if none is idle."""
        idle = [(held.last_seen, sid) for sid, held in self.sessions.items()
                if held.owner == owner and not held.in_flight]  # fmt: skip
        if not idle:
            return False
        _, session_id = min(idle)
        held = self.sessions[session_id]
        self._end(session_id)  # counted out before any await: no other opening picks it
        logger.info("%s is at its session limit: ended its least recently used idle one", owner)
        headers = [*held.headers, (SESSION_HEADER, session_id.encode("latin-1"))]
        delete = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 300:
                logger.warning("ending an idle session was answered %s", message["status"])

        await self.app(delete, receive, send)
        return True

    def _done(self, session_id: str) -> None:
        held = self.sessions.get(session_id)
        if held is not None:
            held.in_flight -= 1
            held.last_seen = self.clock()

    def _end(self, session_id: str) -> None:
        held = self.sessions.pop(session_id, None)
        if held is not None:
            logger.debug("a session of %s ended", held.owner)
        try:
            self.on_end(session_id)
        except Exception:
            logger.exception("cleaning up after a session failed")

    async def _refuse(
        self, owner: str, held: list[_Open], scope: Scope, receive: Receive, send: Send
    ) -> None:
        idle = self.limits.session_idle_timeout
        now = self.clock()
        waits = [h.last_seen + idle - now for h in held if not h.in_flight]
        retry = max(1, math.ceil(min(waits) if waits else idle))
        message = too_many_sessions(owner, self.limits.max_sessions_per_client, idle)
        logger.warning("refused a new session: %s", message)
        error = types.ErrorData(code=types.INVALID_REQUEST, message=message)
        body = types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
        response = Response(
            body.model_dump_json(by_alias=True, exclude_unset=True),
            status_code=429,
            media_type="application/json",
            headers={"Retry-After": str(retry)},
        )
        await response(scope, receive, send)


def header(headers: object, name: bytes) -> str | None:
    for key, value in headers:  # type: ignore[attr-defined]
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def handshake_era(scope: Scope) -> bool:
    """Whether the SDK serves this request on the session path (as it routes: a version header
    naming a 2026-07-28 era goes to the stateless one)."""
    version = header(scope.get("headers", ()), VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS
