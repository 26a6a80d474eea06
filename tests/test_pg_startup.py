"""Opening a store on a PostgreSQL log has a start-up budget of its own (KBES_STARTUP_TIMEOUT),
apart from the bound on a call while the log is out (POSTGRES_CONNECT_TIMEOUT): shared over
eventsourcing's ten tries, the outage bound gave a try 0.12 s, and eight stores opening at once
on a busy machine failed with "couldn't get a connection after 0.12 sec".

A server slow to answer a connect is a proxy that holds each new connection before passing it
on to this module's throwaway cluster (tests/pg_server.py)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

from eventsourcing.utils import Environment
from pg_server import PgServer, running_pg

from kbes.domain.errors import Unavailable
from kbes.store.postgres import KbesPostgresFactory, wait_per_try
from kbes.store.postgres_url import postgres_env
from kbes.store.settings import Settings

pytestmark = pytest.mark.slow

HELD = 2.0
"""Seconds the proxy holds a new connection: past a whole 1 s outage bound (and the libpq
connect timeout that follows it), well within the default start-up budget."""


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


class SlowServer:
    """A TCP proxy to PostgreSQL that passes each new connection on after `HELD` seconds."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        self.url = parts._replace(netloc=parts.netloc.rsplit(":", 1)[0] + f":{port}").geturl()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.sockets.append(client)
            threading.Thread(target=self._pass_on, args=(client,), daemon=True).start()

    def _pass_on(self, client: socket.socket) -> None:
        time.sleep(HELD)  # a busy server, slow to answer
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        self.sockets.append(server)
        for source, sink in ((client, server), (server, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:
            s.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def slow_url(pg: PgServer) -> Iterator[str]:
    proxy = SlowServer(pg.create_database())
    yield proxy.url
    proxy.close()


def factory(url: str, settings: Settings) -> KbesPostgresFactory:
    return KbesPostgresFactory(Environment(name="kbes", env=postgres_env(url, settings)))


def test_a_store_opens_on_a_server_slower_than_the_outage_bound(slow_url: str) -> None:
    opening = factory(f"{slow_url}?connect_timeout=1", Settings(db=slow_url))
    try:
        started = time.monotonic()
        recorder = opening.application_recorder()  # creates the tables: start-up
        assert HELD <= time.monotonic() - started < HELD + 8
        assert recorder.max_notification_id() is None
        # Opened, every call is bound by the outage budget again.
        pool = opening.datastore.pool
        assert pool.timeout == wait_per_try(1.0)
        assert pool.reconnect_timeout == 1.0
        assert pool.kwargs["connect_timeout"] == 1  # type: ignore[index]
    finally:
        opening.close()


def test_a_server_not_reached_within_the_start_up_budget_is_unavailable(slow_url: str) -> None:
    settings = Settings(db=slow_url, connect_timeout=1, startup_timeout=1)
    opening = factory(slow_url, settings)
    try:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"within 1 s of opening \(KBES_STARTUP_TIMEOUT\)"):
            opening.application_recorder()
        assert time.monotonic() - started < 1 + 3
    finally:
        opening.close()
