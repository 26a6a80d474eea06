"""Streamable HTTP with `--tokens`: no token, no service (401); a token reaches only the
knowledge bases its line grants, and any other is `not_found` exactly as a random id is; tokens
never reach the log, even at debug level."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_harness import (
    HttpServer,
    Seed,
    body,
    current_version,
    error,
    event_count,
    http_client,
    http_server,
    probe_calls,
    seed,
)
from raw_http import initialize

pytestmark = pytest.mark.anyio

ALICE = "alice-" + "a1" * 16  # plaintext in the file; granted the Support knowledge base only
BOB = "bob-" + "b2" * 16  # only its sha256 is in the file; granted every knowledge base
WRONG = "mallory-" + "c3" * 16

INITIALIZE = initialize("2025-11-25", request_id=1)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("http") / "kbes.sqlite")


@pytest.fixture(scope="module")
def server(data: Seed) -> Iterator[HttpServer]:
    tokens = data.db.with_name("tokens.txt")
    tokens.write_text(
        "# NAME TOKEN GRANTS\n"
        f"alice  {ALICE}  {data.kb}\n"
        f"bob    sha256:{hashlib.sha256(BOB.encode()).hexdigest()}  *\n"
    )
    tokens.chmod(0o600)
    serve = ("--grant-all", "--tokens", str(tokens), "--edits", "allow", "--log-level", "debug")
    with http_server(data.db, *serve) as running:
        yield running


def post(url: str, payload: dict[str, Any], token: str | None) -> tuple[int, dict[str, str], str]:
    """A raw JSON-RPC POST, as any HTTP client would send it."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


@pytest.mark.slow
def test_requests_without_a_valid_token_get_401(server: HttpServer) -> None:
    for token in (None, WRONG, "", f"sha256:{hashlib.sha256(BOB.encode()).hexdigest()}"):
        status, headers, text = post(server.url, INITIALIZE, token)
        assert status == 401, (token, status, text)
        assert headers["www-authenticate"].startswith("Bearer")
        assert "serverInfo" not in text
    status, _, text = post(server.url, INITIALIZE, ALICE)
    assert status == 200
    assert "serverInfo" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_token_reaches_only_its_knowledge_bases(
    data: Seed, server: HttpServer, mode: str
) -> None:
    random_kb, random_article = str(uuid.uuid4()), str(uuid.uuid4())
    other_version = current_version(data.db, data.other_kb, data.other_article)

    def calls(kb: str, article: str) -> list[tuple[str, dict[str, Any]]]:
        content = "Written with the wrong token."
        return probe_calls(kb, article, other_version, content, f"cross-{mode}")

    before = event_count(data.db)
    async with http_client(server.url, ALICE, mode=mode) as alice:
        # Instructions are the same for every token, so they name no knowledge base.
        assert data.other_kb not in (alice.instructions or "")
        assert data.kb not in (alice.instructions or "")
        found = body(
            await alice.call_tool(
                "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
            )
        )
        assert [hit["article_id"] for hit in found["hits"]] == [data.password]
        for (name, theirs), (_, nobodys) in zip(
            calls(data.other_kb, data.other_article),
            calls(random_kb, random_article),
            strict=True,
        ):
            a = error(await alice.call_tool(name, theirs))
            b = error(await alice.call_tool(name, nobodys))
            assert a["code"] == b["code"] == "not_found", name
            masked = json.dumps(a).replace(data.other_kb, "<kb>").replace(data.other_article, "<a>")
            assert masked == json.dumps(b).replace(random_kb, "<kb>").replace(random_article, "<a>")
    assert event_count(data.db) == before

    # Bob's token (stored as its sha256) is granted every knowledge base.
    async with http_client(server.url, BOB, mode=mode) as bob:
        theirs = body(
            await bob.call_tool(
                "search_knowledge_base", {"knowledge_base_id": data.other_kb, "query": "password"}
            )
        )
        assert [hit["article_id"] for hit in theirs["hits"]] == [data.other_article]


@pytest.mark.slow
async def test_tokens_never_reach_the_log(data: Seed, server: HttpServer) -> None:
    post(server.url, INITIALIZE, WRONG)
    async with http_client(server.url, ALICE) as alice:
        await alice.call_tool(
            "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
        )
    async with http_client(server.url, BOB, mode="legacy") as bob:
        await bob.call_tool(
            "poll_resource_events", {"resource_type": "knowledge_base", "resource_id": data.kb}
        )
    log = server.log()
    assert "POST /mcp" in log  # debug logging was on, requests were logged
    # The token's NAME is what the log shows of the caller.
    assert "alice called search_knowledge_base: ok" in log
    assert "bob called poll_resource_events: ok" in log
    for secret in (ALICE, BOB, WRONG):
        assert secret not in log
        assert secret[-12:] not in log


@pytest.mark.slow
def test_a_token_in_the_url_never_reaches_the_log(server: HttpServer) -> None:
    """Issue 18, defect 8: kbes reads tokens only from the Authorization header, but a client
    may put one in the query string. Hypercorn's access log prints the path without it; any
    other record is masked by position (Bob's token is stored as its sha256, so only masking
    by position can keep it out: ::test_the_query_filter_masks_credentials_in_any_record)."""
    base = server.url
    for secret in (BOB, ALICE, WRONG):
        for query in (f"access_token={secret}", f"x=1&token={secret}", f"api_key={secret}"):
            request = urllib.request.Request(f"{base}?{query}", method="GET")
            try:
                urllib.request.urlopen(request, timeout=30).close()
            except urllib.error.HTTPError as e:
                assert e.code == 401
    log = server.log()
    for secret in (ALICE, BOB, WRONG):
        assert secret not in log
        assert secret[-12:] not in log
    assert '"GET /mcp HTTP/1.1" 401' in log  # the access log did print the request


def test_the_query_filter_masks_credentials_in_any_record() -> None:
    import logging

    from kbes.server.query_redaction import RedactQueryCredentials

    other = logging.LogRecord(
        "mcp.server", logging.DEBUG, __file__, 1, "GET %s", (f"/mcp?page=2&apiKey={BOB}",), None
    )
    assert RedactQueryCredentials().filter(other)
    assert other.getMessage() == "GET /mcp?page=2&apiKey=[redacted]"


@pytest.mark.slow
async def test_the_access_log_names_each_refusal_by_its_code(
    data: Seed, server: HttpServer
) -> None:
    async with http_client(server.url, ALICE) as alice:
        await alice.call_tool(
            "read_knowledge_article", {"knowledge_base_id": data.kb, "article_id": "nope"}
        )
        await alice.call_tool("search_knowledge_base", {"knowledge_base_id": data.kb})
    log = server.log()
    assert "alice called read_knowledge_article: not_found" in log
    assert "alice called search_knowledge_base: invalid_argument" in log


def test_the_log_filter_redacts_tokens_whoever_logs_them() -> None:
    """Belt and braces: even a library that logged a header would not print a listed token."""
    import logging

    from kbes.server.http_auth import RedactTokens

    record = logging.LogRecord(
        "httpx", logging.DEBUG, __file__, 1, "headers: %s", ({"authorization": ALICE},), None
    )
    assert RedactTokens([ALICE]).filter(record)
    assert ALICE not in record.getMessage()
    assert "[token]" in record.getMessage()
