"""A failure that is no `Exception` (pyo3's `PanicException`, as tantivy panics) inside one
request fails that request alone: a real `kbes serve --http` answers it as an error, and every
other request, of that session or a new client's, keeps working (issue 35, defect 2)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import HttpServer, Seed, http_server, seed
from raw_http import Session, client

from kbes.server.resources import article_uri

pytestmark = pytest.mark.slow

PANICKING_KBES = (sys.executable, str(Path(__file__).with_name("panicking_serve.py")))


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


@pytest.fixture
def flag(tmp_path: Path) -> Path:
    return tmp_path / "panic-now"


@pytest.fixture
def server(data: Seed, flag: Path) -> Iterator[HttpServer]:
    env = {**os.environ, "PANIC_FLAG": str(flag)}
    with http_server(data.db, "--grant-all", command=PANICKING_KBES, env=env) as running:
        yield running


def search(session: Session, data: Seed) -> dict:
    arguments = {"knowledge_base_id": data.kb, "query": "password"}
    return session.request("tools/call", {"name": "search_knowledge_base", "arguments": arguments})


def test_a_panic_fails_one_request_and_the_server_serves_on(
    data: Seed, flag: Path, server: HttpServer
) -> None:
    with client() as http:
        first = Session(http, server.url)
        assert first.open().status_code == 200
        assert not search(first, data)["result"].get("isError")

        flag.touch()
        failed = search(first, data)["result"]
        assert failed["isError"] is True
        assert '"code":"internal_error"' in failed["content"][0]["text"]
        uri = article_uri(data.kb, data.password)
        read = first.request("resources/read", {"uri": uri})
        assert read["error"]["code"] == -32603, read
        arguments = {"knowledge_base_id": data.kb, "question": "How?"}
        prompt = first.request("prompts/get", {"name": "cite_answer", "arguments": arguments})
        assert prompt["error"]["code"] == -32603, prompt
        flag.unlink()

        assert not search(first, data)["result"].get("isError")
        assert first.request("resources/read", {"uri": uri})["result"]["contents"]
        second = Session(http, server.url)
        assert second.open().status_code == 200
        assert not search(second, data)["result"].get("isError")
    assert server.process.poll() is None
    assert "PanicException" in server.log()
