"""A bound on the HTTP requests one server answers at once. Past it a request is answered
`503 Service Unavailable` with `Retry-After` at once, rather than queued behind the others, so
a flood of requests costs the flood, not everyone (`--http-max-connections`).

The same layer ends the requests still in flight when the server stops (`end`): an open event
stream never ends by itself, and hypercorn cancelling it after its graceful timeout logged a
traceback for each and made a stop look like a crash (issue 35, defect 10)."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class InFlightLimit:
    """ASGI middleware answering 503 past `limit` HTTP requests in flight (a streamed response
    is in flight until it ends)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._open: dict[anyio.CancelScope, Scope] = {}
        self._idle = anyio.Event()
        self._idle.set()

    @property
    def in_flight(self) -> int:
        return len(self._open)

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
        with anyio.CancelScope() as request:
            self._open[request] = scope
            if self._idle.is_set():
                self._idle = anyio.Event()
            try:
                await self.app(scope, receive, send)
            finally:
                del self._open[request]
                if not self._open:
                    self._idle.set()

    def end(self, which: Callable[[Scope], bool] = lambda scope: True) -> None:
        """End the requests in flight that `which` picks (their responses end where they are)."""
        for request, scope in list(self._open.items()):
            if which(scope):
                request.cancel()

    async def drain(self, grace: float) -> None:
        """On stop: end the event streams (GET) at once, let the other requests finish for up
        to `grace` seconds, then end them too."""
        self.end(lambda scope: scope["method"] == "GET")
        with anyio.move_on_after(grace):
            await self._idle.wait()
        self.end()
