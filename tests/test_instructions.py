"""The server's instructions stay short however many knowledge bases the database holds (issue
18, defect 10: with 10,000 of them, `initialize` was 729,533 bytes). A few are listed by name and
id; past that the instructions give the count and `resources/list` lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_harness import http_client, http_server
from test_mcp_http import INITIALIZE, post

from kbes import open_store
from kbes.server import identity

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MANY = 400
MAX_INITIALIZE_BYTES = 4096


def many_knowledge_bases(db: Path, count: int) -> list[str]:
    store = open_store(db, synchronous="OFF")  # a throwaway database
    try:
        return [
            str(store.create_knowledge_base(f"Team {n} handbook, with a fairly long name"))
            for n in range(count)
        ]
    finally:
        store.close()


async def test_initialize_stays_small_with_many_knowledge_bases(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    ids = many_knowledge_bases(db, MANY)
    with http_server(db, "--grant-all") as server:
        status, _, answer = post(server.url, INITIALIZE, None)
        assert status == 200
        size = len(answer.encode())
        assert size <= MAX_INITIALIZE_BYTES, f"initialize answered {size} bytes"
        data = json.loads(
            next(line[5:] for line in answer.splitlines() if line.startswith("data:"))
        )
        instructions = data["result"]["instructions"]
        assert f"{MANY} knowledge bases are available: resources/list lists them" in instructions
        async with http_client(server.url) as client:
            listed = await client.list_resources()
        assert sorted(r.uri.rsplit("/", 1)[1] for r in listed.resources) == sorted(ids)


def test_a_few_knowledge_bases_are_listed_by_name_and_id() -> None:
    most, instructions_for = identity.MAX_LISTED, identity.instructions_for
    few = [(f"{n:08d}-0000-4000-8000-000000000000", f"KB {n}") for n in range(most)]
    text = instructions_for(few)
    assert all(f"KB {n} (knowledge_base_id {kb})" in text for n, (kb, _) in enumerate(few))
    many = instructions_for([*few, ("ffffffff-0000-4000-8000-000000000000", "one more")])
    assert "one more" not in many and f"{most + 1} knowledge bases" in many
    assert len(instructions_for([("x", "n" * 100_000)])) < 1000
