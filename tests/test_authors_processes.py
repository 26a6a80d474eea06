"""Issue 34's acceptance, through real processes: a person's `kbes article save` with
`KBES_AUTHOR=alice`, an agent's edit over `kbes serve --http --tokens` with a token named
`support-bot`, and an agent's edit over `kbes serve` on stdio, each with the official MCP
client; then `kbes article history --json` and `kbes log export` (run as commands) name each
author, told apart by kind. The token's secret appears nowhere in the log."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import KBES, body, http_client, http_server, seed, stdio_client
from mcp_types import Implementation

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def kbes(*args: str, **env: str) -> str:
    done = subprocess.run(
        [KBES, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def edit(client: Any, kb: str, article: str, content: str, key: str) -> dict[str, Any]:
    read = body(
        await client.call_tool(
            "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}
        )
    )
    edited = body(
        await client.call_tool(
            "edit_knowledge_article",
            {
                "knowledge_base_id": kb,
                "article_id": article,
                "content": content,
                "expected_version": read["updated_at"],
                "idempotency_key": key,
            },
        )
    )
    assert edited["replay"] is False
    return edited


async def test_a_person_a_token_and_a_stdio_client_each_appear_with_their_author(
    tmp_path: Path,
) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    db = str(data.db)
    env = {k: v for k, v in os.environ.items() if k != "KBES_AUTHOR"}
    tokens = tmp_path / "tokens.txt"
    secret = kbes(
        "token", "add", "support-bot", "--grant", data.kb, "--tokens", str(tokens), "--db", db
    )
    secret = secret.strip()

    # A person, at a shell.
    kbes(
        "article", "save", "--kb", data.kb, data.draft, "--content", "Ships on Monday.",
        "--db", db, KBES_AUTHOR="alice",
    )  # fmt: skip
    # An agent over HTTP, holding the token named support-bot.
    with http_server(data.db, "--grant-all", "--tokens", str(tokens), "--edits", "allow",
                     env=env) as server:  # fmt: skip
        async with http_client(server.url, secret) as client:
            await edit(client, data.kb, data.password, "Open Settings, then Security.", "http-1")
    # An agent over stdio, whose client says who it is.
    info = Implementation(name="stdio-agent", version="1.0")
    async with stdio_client(data.db, "--grant", data.kb, "--edits", "allow",
                            client_info=info) as client:  # fmt: skip
        await edit(client, data.kb, data.billing, "Invoices go out on the 2nd.", "stdio-1")

    def last_author(article: str) -> dict[str, Any]:
        versions = json.loads(kbes("article", "history", "--kb", data.kb, article, "--json",
                                   "--db", db))  # fmt: skip
        author: dict[str, Any] = versions[-1]["author"]
        return author

    person = {"kind": "person", "name": "alice", "how": "env", "approved": False}
    bearer = {"kind": "token", "name": "support-bot", "how": "bearer", "approved": False}
    declared = {"kind": "client", "name": "stdio-agent 1.0", "how": "declared", "approved": False}
    assert last_author(data.draft) == person
    assert last_author(data.password) == bearer
    assert last_author(data.billing) == declared

    exported = kbes("log", "export", "--db", db)
    assert secret not in exported
    lines = [json.loads(line) for line in exported.splitlines()]
    saved = {line["originator_id"]: line["author"] for line in lines if line["type"] == "saved"}
    assert saved == {data.draft: person, data.password: bearer, data.billing: declared}
    receipts = [line["author"] for line in lines if line["type"] == "edit_recorded"]
    assert receipts == [bearer, declared]  # an edit's receipt names the same author
    kinds = {author["kind"] for author in saved.values()}
    assert kinds == {"person", "token", "client"}
    log = server.log()
    assert secret not in log
