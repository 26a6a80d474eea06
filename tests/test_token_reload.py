"""A running `kbes serve --http --tokens FILE` follows the file as `kbes token` changes it, with
no restart: a token added is accepted at its next request, one removed is refused (an open
session too), a line the server may not accept is left out with a warning while every other
token keeps working, and no secret ever reaches the log."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import Seed, body, error, http_client, http_server, run_kbes, seed
from raw_http import initialize

from kbes.server.tokens_file import token_digest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INITIALIZE = initialize("2025-11-25", request_id=1)


def status(url: str, token: str) -> int:
    """The HTTP status of a request bearing `token` (401: refused at the door)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def token_add(data: Seed, tokens: Path, name: str, grant: str) -> str:
    done = run_kbes(
        "token", "add", name, "--grant", grant, "--tokens", str(tokens), "--db", str(data.db)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def token_remove(tokens: Path, name: str) -> None:
    done = run_kbes("token", "remove", name, "--tokens", str(tokens))
    assert done.returncode == 0, done.stderr


async def searches(url: str, token: str, kb: str) -> str:
    """How a search of `kb` by the holder of `token` ends: ok, or the error's code."""
    async with http_client(url, token) as client:
        result = await client.call_tool(
            "search_knowledge_base", {"knowledge_base_id": kb, "query": "password"}
        )
    return error(result)["code"] if result.is_error else ("ok" if body(result)["hits"] else "")


async def test_the_server_follows_the_tokens_file_kbes_token_writes(tmp_path: Path) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    tokens = tmp_path / "tokens.txt"
    alice = token_add(data, tokens, "alice", data.kb)
    serve = ("--grant", data.kb, "--tokens", str(tokens), "--log-level", "debug")
    with http_server(data.db, *serve) as server:
        assert await searches(server.url, alice, data.kb) == "ok"

        # Added while the server runs: accepted at once, within the server's grants.
        bob = token_add(data, tokens, "bob", "*")
        assert await searches(server.url, bob, data.kb) == "ok"
        assert await searches(server.url, bob, data.other_kb) == "not_found"

        # A token granting what the server is not granted is left out, and said so.
        carol = token_add(data, tokens, "carol", data.other_kb)
        assert status(server.url, carol) == 401
        assert f"token 'carol' grants {data.other_kb}, which the server is not granted" in (
            server.log()
        )
        assert await searches(server.url, bob, data.kb) == "ok"

        # Removed: refused from the next request on, in a session opened before too.
        refused = server.log().count('"POST /mcp HTTP/1.1" 401')
        async with http_client(server.url, alice) as session:
            token_remove(tokens, "alice")
            with pytest.raises(MCPError):
                await session.call_tool(
                    "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
                )
        # The access line is written once the response has gone: wait for it.
        deadline = time.monotonic() + 10
        while server.log().count('"POST /mcp HTTP/1.1" 401') <= refused:
            assert time.monotonic() < deadline, "no 401 in the access log"
            time.sleep(0.05)
        assert status(server.url, alice) == 401
        assert status(server.url, bob) == 200

        # A line broken by hand is left out with a warning naming it; the rest holds.
        with tokens.open("a") as file:
            file.write("dave not-a-token-line\n")
        assert status(server.url, bob) == 200
        assert "line 4: expected NAME TOKEN GRANTS" in server.log()

        # A file that cannot be read leaves the last tokens in force, with a warning.
        saved = tokens.read_text()
        tokens.unlink()
        assert status(server.url, bob) == 200
        assert "cannot read tokens file" in server.log()
        tokens.write_text(saved)
        token_remove(tokens, "bob")
        assert status(server.url, bob) == 401

        # Every token gone: every request refused.
        token_remove(tokens, "carol")
        assert status(server.url, carol) == 401
        assert "holds no token now" in server.log()

    log = server.log()
    assert "POST /mcp" in log and "read again" in log  # debug logging was on
    for secret in (alice, bob, carol):
        assert secret not in log and secret[-12:] not in log
        assert token_digest(secret) not in log
