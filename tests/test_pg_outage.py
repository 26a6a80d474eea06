"""PostgreSQL stopped under a running `kbes serve --http`: calls answer `unavailable` within
about one POSTGRES_CONNECT_TIMEOUT (kbes's default 3 s), and the server answers again within
seconds of PostgreSQL coming back, by itself.

Before, eventsourcing's ten tries of each statement, each waiting up to 30 s for a pool
connection, made a read answer `internal_error` after minutes, and the pool's reconnection,
its attempts spaced ever wider, left a server failing for a minute after PostgreSQL was back.

A real server on a cluster of this test's own (tests/pg_server.py), stopped with `pg_ctl -m
fast stop` and started again, and the SDK's real client over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

from mcp_harness import body, current_version, error, http_client, http_server, seed
from pg_server import PgServer, running_pg

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

UNAVAILABLE_WITHIN = 12.0
"""Seconds a call may take to be refused while PostgreSQL is down (3 s plus a shared machine)."""
RECOVERED_WITHIN = 15.0
"""Seconds after PostgreSQL is back by which a call must be answered again."""
CALL_LIMIT = 60.0
"""Seconds after which a call counts as hung (before the fix: minutes)."""


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PgServer]:
    """A cluster for this module alone: stopping it disturbs no other test."""
    yield from running_pg()


async def timed(client: Any, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    started = time.monotonic()
    with anyio.fail_after(CALL_LIMIT):
        result = await client.call_tool(tool, arguments)
    return result, time.monotonic() - started


async def test_a_stopped_postgres_is_unavailable_at_once_and_back_by_itself(
    own_pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not own_pg.can_pause():
        pytest.skip("KBES_TEST_POSTGRES_URL names a server this test may not stop")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = own_pg.create_database()
    data = seed(url)
    version = current_version(url, data.kb, data.password)  # type: ignore[arg-type]
    search = {"knowledge_base_id": data.kb, "query": "password"}
    edit = {
        "knowledge_base_id": data.kb,
        "article_id": data.password,
        "content": "Open Settings, then Security, then Reset password.",
        "expected_version": version,
        "idempotency_key": "outage-1",
    }
    with http_server(
        url, "--grant-all", "--edits", "allow", log_path=tmp_path / "serve.log"
    ) as server:
        async with http_client(server.url) as client:
            result, _ = await timed(client, "search_knowledge_base", search)
            assert body(result)["hits"]
            own_pg.pause()
            try:
                refused = {}
                for tool, arguments in (
                    ("search_knowledge_base", search),
                    ("edit_knowledge_article", edit),
                ):
                    result, took = await timed(client, tool, arguments)
                    answer = error(result)
                    assert answer["code"] == "unavailable", answer
                    assert "nothing was written, retry later" in answer["message"]
                    refused[tool] = took
                assert max(refused.values()) < UNAVAILABLE_WITHIN, refused
            finally:
                own_pg.resume()
            back = time.monotonic()
            while True:
                result, _ = await timed(client, "search_knowledge_base", search)
                if not result.is_error:
                    break
                assert error(result)["code"] == "unavailable"
                assert time.monotonic() - back < RECOVERED_WITHIN, "not answering again"
                await anyio.sleep(0.2)
            assert body(result)["hits"]
            # The refused edit wrote nothing: the same call now applies, once.
            result, _ = await timed(client, "edit_knowledge_article", edit)
            assert body(result)["replay"] is False
