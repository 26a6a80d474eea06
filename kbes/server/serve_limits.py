"""The limits and timeouts `kbes serve` holds every client to, read once from its flags into one
`ServeLimits` and passed down: how long a request's headers may take, how many connections and
sessions a server (and one token, or one client address) may hold, how long an idle session
lives, how many handshake-era subscriptions one session may hold. Free of the MCP SDK, so the
CLI builds it before the SDK's slow import; docs/operations.md lists each with its test."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
DEFAULT_SESSION_IDLE_TIMEOUT = 300.0
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_MAX_SESSIONS_PER_CLIENT = 32
DEFAULT_MAX_SUBSCRIPTIONS = 1000


@dataclass(frozen=True)
class ServeLimits:
    """One server's limits; the defaults are kbes's."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    """Seconds from a connection's opening (or its previous response) to the end of a request's
    headers; past that the connection is closed (hypercorn's `keep_alive_timeout`, so also how
    long an idle keep-alive connection stays open; `--http-header-timeout`)."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Requests in flight past which a request is answered 503 (kbes.server.in_flight;
    `--http-max-connections`)."""
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    """Bytes of a request line and headers (hypercorn's `h11_max_incomplete_size`)."""
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    """Seconds a handshake-era HTTP session lives with no request in flight
    (`--session-idle-timeout`)."""
    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Handshake-era HTTP sessions the server holds in all (the MCP SDK's `max_sessions`)."""
    max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT
    """Sessions one token NAME (without --tokens, one client address) may hold open
    (`--max-sessions-per-client`)."""
    max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS
    """`resources/subscribe` URIs one handshake-era session may hold (`--max-subscriptions`)."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{spec.name} must be a positive number, not {value!r}")


DEFAULT_SERVE_LIMITS = ServeLimits()
