"""A bound on the HTTP requests one server answers at once. Past it a request is answered
`503 Service Unavailable` with `Retry-After` at once, rather than queued behind the others, so
a flood of requests costs the flood, not everyone (`--http-max-connections`)."""

from __future__ import annotations

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class InFlightLimit:
    """ASGI middleware answering 503 past `limit` HTTP requests in flight (a streamed response
    is in flight until it ends)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            busy = PlainTextResponse(
                f"The server is answering {self.limit} requests already; retry shortly.\n",
                status_code=503,
                headers={"Retry-After": "1"},
            )
            await busy(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
