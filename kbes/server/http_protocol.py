"""uvicorn's HTTP/1.1 protocol with a deadline on request headers. uvicorn times out an idle
keep-alive connection only after a response, and not at all while a request's headers trickle
in, so connections that never finish their headers would stay open for ever (issue 18,
defect 13). This subclass of uvicorn's h11 protocol (the class `uvicorn.Config(http=...)`
takes) arms one timer when a connection opens and again after each response, and disarms it
when the next request's headers are complete (uvicorn has begun a new request cycle); if it
fires first, the connection is answered `408 Request Timeout` and closed. Bodies and streamed
responses are not timed here: see docs/operations.md for what a reverse proxy adds."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 36\r\n\r\nRequest headers took too long; bye.\n"
)


class HeaderDeadlineProtocol(H11Protocol):
    """`H11Protocol` whose request headers must arrive within `header_timeout` seconds."""

    header_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._armed_for: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._disarm_if_headers_came()

    def on_response_complete(self) -> None:
        # Armed before uvicorn looks at pipelined data, which may start the next cycle.
        self._arm()
        super().on_response_complete()
        self._disarm_if_headers_came()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._armed_for = self.cycle
        self._deadline = self.loop.call_later(self.header_timeout, self._expire)

    def _disarm_if_headers_came(self) -> None:
        if self._deadline is not None and self.cycle is not self._armed_for:
            self._disarm()

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.write(REQUEST_TIMEOUT)
            self.transport.close()


def header_deadline_protocol(timeout: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class for one server, its headers due within `timeout` seconds."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout": timeout})
