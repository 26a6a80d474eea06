"""A slow client cannot exhaust `kbes serve --http` (issue 18, defect 13: 1,500 connections that
never finished their headers were all still open after 62 s). Request headers have a deadline
(`--http-header-timeout`, hypercorn's keep-alive timer), after which the connection is closed,
however slowly the bytes trickle; and past `--http-max-connections` requests in flight a
request is answered 503 at once rather than queued. Real `kbes serve` processes and raw
sockets."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest
from mcp_harness import http_client, http_server, seed
from test_mcp_http import INITIALIZE, post

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
"""A request whose headers never end (no blank line)."""


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def connect(port: int, send: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if send:
        sock.sendall(send)
    return sock


def closed_by_server(socks: list[socket.socket], within: float) -> list[tuple[bool, bytes]]:
    """For each socket, whether the server closed it within `within` seconds (all measured from
    now), and what it sent first."""
    deadline = time.monotonic() + within
    results = []
    for sock in socks:
        received, closed = b"", False
        while not closed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                break
            except ConnectionResetError:
                chunk = b""
            closed = not chunk
            received += chunk
        results.append((closed, received))
    return results


async def a_real_client_works(url: str) -> None:
    async with http_client(url, mode="legacy") as client:
        assert (await client.list_tools()).tools


def test_connections_that_never_finish_their_headers_are_closed(tmp_path: Path) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    with http_server(data.db, "--grant-all", "--http-header-timeout", "1") as server:
        port = port_of(server.url)
        stuck = [connect(port, PARTIAL) for _ in range(300)]
        silent = [connect(port) for _ in range(50)]
        trickle = connect(port)
        started = time.monotonic()
        for byte in PARTIAL:  # one byte every 0.1 s: each byte alone is never late
            try:
                trickle.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break  # the server closed it: what is checked below
            time.sleep(0.1)
            if time.monotonic() - started > 3:
                break
        anyio.run(a_real_client_works, server.url)  # meanwhile, a real client is served
        results = closed_by_server([*stuck, *silent, trickle], 3)
        still_open = sum(1 for closed, _ in results if not closed)
        assert still_open == 0, f"{still_open} of {len(results)} connections still open"
        assert all(first == b"" for _, first in results)  # closed, nothing answered
        for sock in [*stuck, *silent, trickle]:
            sock.close()
        status, _, _ = post(server.url, INITIALIZE, None)
        assert status == 200


STALLED = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"
)
"""A request whose headers are complete and whose body never ends: in flight until closed."""


def test_past_the_request_limit_a_request_is_answered_503(tmp_path: Path) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    serve = ("--grant-all", "--http-max-connections", "20", "--http-header-timeout", "2")
    with http_server(data.db, *serve) as server:
        idle = [connect(port_of(server.url)) for _ in range(25)]
        status, _, _ = post(server.url, INITIALIZE, None)
        assert status == 200  # idle connections are not requests
        stalled = [connect(port_of(server.url), STALLED) for _ in range(20)]
        try:
            time.sleep(0.5)  # the server has taken them up
            status, headers, text = post(server.url, INITIALIZE, None)
            assert status == 503, text
            assert {k.lower(): v for k, v in headers.items()}.get("retry-after") == "1"
        finally:
            for sock in stalled:
                sock.close()
        results = closed_by_server(idle, 5)
        assert all(closed for closed, _ in results)  # the header deadline freed them
        time.sleep(0.5)
        status, _, _ = post(server.url, INITIALIZE, None)
        assert status == 200
