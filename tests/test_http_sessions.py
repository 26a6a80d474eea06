"""Handshake-era HTTP sessions are bounded and end cleanly (issue 18): a session's
`resources/subscribe` subscriptions end with it, at DELETE or idle expiry, so the push tail
stops querying the log (defect 3); one session holds a bounded number of them; one token (or,
without tokens, one client address) holds a bounded number of sessions, so it cannot lock
anyone else out, and idle sessions expire (defect 9). Real `kbes serve --http` processes, raw
HTTP clients (`raw_http`) and the SDK's client."""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp_harness import KBES, HttpServer, Seed, http_client, http_server, seed
from raw_http import Session, article_uris, client

from kbes.server.resources import knowledge_base_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-" + "a1" * 16
BOB = "bob-" + "b2" * 16
IDLE = 2.0
"""--session-idle-timeout of these servers, in seconds."""
LEFT = "push: no listener left"
"""What the tail logs (at info) when its last listener has gone and it stops querying."""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("sessions") / "kbes.sqlite")


@pytest.fixture(scope="module")
def open_server(data: Seed) -> Iterator[HttpServer]:
    """No tokens: sessions are counted per client address."""
    limits = ("--max-subscriptions", "50", "--max-sessions-per-client", "4")
    serve = ("--grant-all", "--log-level", "info", "--session-idle-timeout", str(IDLE), *limits)
    with http_server(data.db, *serve) as running:
        yield running


@pytest.fixture(scope="module")
def token_server(data: Seed) -> Iterator[HttpServer]:
    tokens = data.db.with_name("tokens.txt")
    tokens.write_text(
        f"alice {ALICE} {data.kb}\nbob sha256:{hashlib.sha256(BOB.encode()).hexdigest()} *\n"
    )
    tokens.chmod(0o600)
    serve: tuple[str, ...] = ("--grant-all", "--tokens", str(tokens), "--log-level", "info")
    serve = (*serve, "--session-idle-timeout", str(IDLE))
    with http_server(data.db, *serve, "--max-sessions-per-client", "5") as running:
        yield running


def wait_for_lines(server: HttpServer, text: str, count: int, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    while (found := server.log().count(text)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def rings_on_a_save(http: httpx.Client, session: Session, data: Seed) -> bool:
    """Whether a save in `data.kb` rings `session` (subscribed to it) on its standalone
    channel within 10 s: its subscription is live."""
    headers = {**session._headers(), "Accept": "text/event-stream"}
    with http.stream("GET", session.url, headers=headers, timeout=10) as channel:
        assert channel.status_code == 200
        done = subprocess.run(
            [KBES, "article", "save", data.password, "--kb", data.kb, "--db", str(data.db),
             "--content", f"Reset it from the Account page ({time.monotonic_ns()})."],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        try:
            for line in channel.iter_lines():  # a read waits at most the 10 s timeout
                if "notifications/resources/updated" in line:
                    return True
        except httpx.ReadTimeout:
            pass
    return False


def test_a_deleted_sessions_subscriptions_are_dropped(data: Seed, open_server: HttpServer) -> None:
    """Defect 3: subscribe, DELETE; the tail's last listener must go, each time."""
    before = open_server.log().count(LEFT)
    with client() as http:
        for cycle in range(1, 4):
            session = Session(http, open_server.url)
            assert session.open().status_code == 200
            for uri in [knowledge_base_uri(data.kb), *article_uris(data.kb, 40)]:
                assert "error" not in session.subscribe(uri)
            assert session.close() == 200
            found = wait_for_lines(open_server, LEFT, before + cycle, 10)
            assert found == before + cycle, f"cycle {cycle}: the tail still has listeners"


def test_an_expired_sessions_subscriptions_are_dropped(data: Seed, open_server: HttpServer) -> None:
    """A session that is never DELETEd expires when idle, and its subscriptions with it."""
    before = open_server.log().count(LEFT)
    with client() as http:
        session = Session(http, open_server.url)
        assert session.open().status_code == 200
        session.subscribe(knowledge_base_uri(data.kb))
        assert wait_for_lines(open_server, LEFT, before + 1, IDLE + 10) == before + 1
        gone = http.post(open_server.url, headers=session._headers(), json={"jsonrpc": "2.0"})
        assert gone.status_code == 404  # the SDK ended the session too


def test_one_session_holds_a_bounded_number_of_subscriptions(
    data: Seed, open_server: HttpServer
) -> None:
    with client() as http:
        session = Session(http, open_server.url)
        assert session.open().status_code == 200
        uris = article_uris(data.kb, 51)
        for uri in uris[:50]:
            assert "error" not in session.subscribe(uri)
        assert "error" not in session.subscribe(uris[0])  # again: already held, acknowledged
        refused = session.subscribe(uris[50])
        assert "50 resource subscriptions" in refused["error"]["message"]
        assert "--max-subscriptions" in refused["error"]["message"]
        session.request("resources/unsubscribe", {"uri": uris[0]})
        assert "error" not in session.subscribe(uris[50])
        assert session.close() == 200


def test_one_token_cannot_lock_out_another(token_server: HttpServer) -> None:
    """Defect 9: alice opens sessions and never closes them; bob is unaffected."""

    async def bob_lists_tools() -> list[str]:
        async with http_client(token_server.url, BOB, mode="legacy") as bob:
            return [tool.name for tool in (await bob.list_tools()).tools]

    with client(ALICE) as alice:
        held = [Session(alice, token_server.url) for _ in range(5)]
        assert [s.open().status_code for s in held] == [200] * 5
        refused = Session(alice, token_server.url).open()
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        message = refused.json()["error"]["message"]
        assert "token alice already holds 5 open MCP sessions" in message
        assert "--max-sessions-per-client" in message

        assert "search_knowledge_base" in anyio.run(bob_lists_tools)

        assert held[0].close() == 200  # a DELETE frees one at once
        assert Session(alice, token_server.url).open().status_code == 200
        assert Session(alice, token_server.url).open().status_code == 429
        # Idle sessions expire, and free their places: five open again within the bound.
        deadline = time.monotonic() + IDLE + 10
        again: list[Session] = []
        while len(again) < 5:
            assert time.monotonic() < deadline, f"{len(again)} of 5 places freed"
            session = Session(alice, token_server.url)
            if session.open().status_code == 200:
                again.append(session)
            else:
                time.sleep(0.1)


def test_without_tokens_sessions_are_counted_per_client_address(open_server: HttpServer) -> None:
    """Issue 35, defect 11: local clients that never end their sessions (the TypeScript SDK's
    close(), the conformance runner) are not locked out: at its limit a client's least recently
    used idle session ends to make room; only a client whose every session is busy (here, an
    open event stream each) is refused, and another address is unaffected."""
    with client() as here, client(source="127.0.0.2") as there:
        for run in range(2):  # two conformance-like runs of 2 x the limit, nothing DELETEd
            opened = [Session(here, open_server.url) for _ in range(8)]
            assert [s.open().status_code for s in opened] == [200] * 8, f"run {run}"
        assert opened[4].request("ping", {}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        ended = here.post(open_server.url, headers=opened[3]._headers(), json={"jsonrpc": "2.0"})
        assert ended.status_code == 404  # past the limit of 4: ended in the SDK too
        mine = opened[4:]
        streams = [EventStream(here, open_server.url, session) for session in mine]
        refused = Session(here, open_server.url).open()
        assert refused.status_code == 429
        assert re.search(r"client address 127\.0\.0\.1 already holds 4", refused.text)
        assert Session(there, open_server.url).open().status_code == 200
        for stream in streams:
            stream.close()
        for session in mine:
            session.close()


class EventStream:
    """A session's standalone event stream (GET), held open in a thread until `close`."""

    def __init__(self, http: Any, url: str, session: Session) -> None:
        self._open = threading.Event()
        self._responses: list[Any] = []

        def hold() -> None:
            with http.stream("GET", url, headers=session._headers()) as response:
                self._responses.append(response)
                self._open.set()
                with contextlib.suppress(Exception):  # closed by `close`
                    for _ in response.iter_bytes():
                        pass

        self._thread = threading.Thread(target=hold, daemon=True)
        self._thread.start()
        assert self._open.wait(10)
        assert self._responses[0].status_code == 200

    def close(self) -> None:
        self._responses[0].close()
        self._thread.join(10)


def test_another_tokens_request_does_not_end_a_session(
    data: Seed, token_server: HttpServer
) -> None:
    """The SDK answers 404 to a session id another token names, as if it did not exist; that
    ends nothing: bob's subscription stays until bob DELETEs his session."""
    before = token_server.log().count(LEFT)
    with client(BOB) as bob, client(ALICE) as alice:
        mine = Session(bob, token_server.url)
        assert mine.open().status_code == 200
        assert "error" not in mine.subscribe(knowledge_base_uri(data.kb))
        theirs = alice.post(token_server.url, headers=mine._headers(), json={"jsonrpc": "2.0"})
        assert theirs.status_code == 404
        assert rings_on_a_save(bob, mine, data)  # still listening
        assert "error" not in mine.request("ping", {})
        assert mine.close() == 200
        assert wait_for_lines(token_server, LEFT, before + 1, 10) == before + 1
