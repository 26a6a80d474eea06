"""The whole agent flow through the SDK's real client against a real `kbes serve`, over stdio and
over streamable HTTP, in both protocol eras: list the tools and compare them with the table of
docs/tools.md, then search, read, edit with the cited version, replay, stale edit, a person's
save and unpublish from the CLI in another process, and poll from 0 and from the returned
cursor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp_harness import (
    Seed,
    article_events,
    body,
    error,
    event_count,
    http_client,
    http_server,
    run_kbes,
    seed,
    stdio_client,
)

from kbes.tools import TOOLS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}

DESIGN_CONTRACT: dict[str, dict[str, Any]] = {
    # The tool table of docs/tools.md (and the README), transcribed.
    "search_knowledge_base": {
        "required": {"knowledge_base_id", "query"},
        "optional": {"limit"},
        "limits": {
            "query": {"minLength": 2, "maxLength": 200},
            "limit": {"minimum": 1, "maximum": 20},
        },
        "annotations": READ_ONLY,
    },
    "read_knowledge_article": {
        "required": {"knowledge_base_id", "article_id"},
        "optional": set(),
        "limits": {},
        "annotations": READ_ONLY,
    },
    "edit_knowledge_article": {
        "required": {
            "knowledge_base_id",
            "article_id",
            "content",
            "expected_version",
            "idempotency_key",
        },
        "optional": {"title"},
        "limits": {"expected_version": {"type": "string", "format": "date-time"}},
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": True,
        },
    },
    "poll_resource_events": {
        "required": {"resource_type", "resource_id"},
        "optional": {"after_sequence", "limit"},
        "limits": {"after_sequence": {"minimum": 0}, "limit": {"minimum": 1, "maximum": 100}},
        "annotations": READ_ONLY,
    },
}

DESCRIPTIONS_SAY = {
    # What the issue asks each description to tell a model.
    "search_knowledge_base": ["updated_at", "citation"],
    "read_knowledge_article": ["updated_at", "expected_version"],
    "edit_knowledge_article": [
        "expected_version",
        "version_conflict",
        "read it again",
        "retry",
        "idempotency_key",
    ],
    "poll_resource_events": ["next_sequence", "after_sequence"],
}


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


@asynccontextmanager
async def connect(transport: str, mode: str, data: Seed) -> AsyncIterator[Client]:
    serve = ("--grant", data.kb, "--edits", "allow")
    if transport == "stdio":
        async with stdio_client(data.db, *serve, mode=mode) as client:
            yield client
    else:
        with http_server(data.db, *serve) as server:
            async with http_client(server.url, mode=mode) as client:
                yield client


def check_contract(tools: list[types.Tool]) -> None:
    assert [tool.name for tool in tools] == list(DESIGN_CONTRACT)
    for tool in tools:
        expected = DESIGN_CONTRACT[tool.name]
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert set(schema["required"]) == expected["required"], tool.name
        assert set(schema["properties"]) == expected["required"] | expected["optional"]
        assert schema["additionalProperties"] is False, tool.name
        for field, limits in expected["limits"].items():
            for key, value in limits.items():
                assert schema["properties"][field][key] == value, (tool.name, field, key)
        annotations = tool.annotations
        assert annotations is not None
        assert annotations.model_dump(by_alias=True, exclude_none=True) == expected["annotations"]
        # The server advertises exactly what the Tool objects state, output schema included.
        assert schema == TOOLS[tool.name].input_schema()
        assert tool.output_schema == TOOLS[tool.name].output_schema()
        assert tool.description == TOOLS[tool.name].description
        assert tool.description
        for phrase in DESCRIPTIONS_SAY[tool.name]:
            assert phrase in tool.description, (tool.name, phrase)


@pytest.mark.parametrize(
    ("transport", "mode"),
    [("stdio", "auto"), ("stdio", "legacy"), ("http", "auto"), ("http", "legacy")],
)
async def test_whole_flow(transport: str, mode: str, data: Seed) -> None:
    kb, db = data.kb, str(data.db)
    async with connect(transport, mode, data) as client:
        if mode == "legacy":
            assert client.protocol_version < "2026"
        else:
            assert client.protocol_version >= "2026-07-28"

        async def call(name: str, **arguments: Any) -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        check_contract((await client.list_tools()).tools)
        # The instructions tell the model which knowledge bases it may pass, and only those.
        assert f"Support (knowledge_base_id {kb})" in (client.instructions or "")
        assert data.other_kb not in (client.instructions or "")

        # Search: ranked hits, each with its citation; drafts never show.
        found = body(await call("search_knowledge_base", knowledge_base_id=kb, query="reset"))
        assert [hit["article_id"] for hit in found["hits"]] == [data.password]
        hit = found["hits"][0]
        cited = hit["citation"]
        assert cited == {
            "knowledge_base_id": kb,
            "article_id": data.password,
            "updated_at": hit["updated_at"],
        }
        drafts = await call("search_knowledge_base", knowledge_base_id=kb, query="zanzibarite")
        assert body(drafts)["hits"] == []

        # Read: the content and the same citation.
        read = body(
            await call("read_knowledge_article", knowledge_base_id=kb, article_id=data.password)
        )
        assert read["citation"] == cited
        assert "Settings" in read["content"]

        # Edit with the cited version: one new event, a newer version.
        edit = {
            "knowledge_base_id": kb,
            "article_id": data.password,
            "content": read["content"] + "\nIf you have no access to Settings, ask an admin.",
            "expected_version": cited["updated_at"],
            "idempotency_key": f"flow-{transport}-{mode}-1",
        }
        edited = body(await call("edit_knowledge_article", **edit))
        assert edited["replay"] is False
        assert edited["updated_at"] > cited["updated_at"]
        assert edited["citation"]["updated_at"] == edited["updated_at"]
        assert article_events(data.db, data.password) == ["Drafted", "Published", "Saved"]

        # The same call again is a replay: the first result, nothing written.
        head = event_count(data.db)
        again = body(await call("edit_knowledge_article", **edit))
        assert again == {**edited, "replay": True}
        assert event_count(data.db) == head

        # A stale citation: version_conflict with the current version.
        stale = error(
            await call(
                "edit_knowledge_article",
                **{**edit, "content": "Stale.", "idempotency_key": f"flow-{transport}-{mode}-2"},
            )
        )
        assert stale["code"] == "version_conflict"
        assert stale["current_version"] == edited["updated_at"]
        assert event_count(data.db) == head

        # A person saves from the CLI in another process; the next tool call sees it.
        saved = run_kbes(
            "article", "save", "--db", db, "--kb", kb, data.password, "--content", "Call IT."
        )
        assert saved.returncode == 0, saved.stderr
        reread = body(
            await call("read_knowledge_article", knowledge_base_id=kb, article_id=data.password)
        )
        assert reread["content"] == "Call IT."
        assert reread["updated_at"] > edited["updated_at"]

        # Unpublished from the CLI: read and edit answer `gone`.
        gone = run_kbes("article", "unpublish", "--db", db, "--kb", kb, data.password)
        assert gone.returncode == 0, gone.stderr
        unread = error(
            await call("read_knowledge_article", knowledge_base_id=kb, article_id=data.password)
        )
        assert unread["code"] == "gone"
        unedited = error(
            await call(
                "edit_knowledge_article",
                **{
                    **edit,
                    "expected_version": reread["updated_at"],
                    "idempotency_key": f"flow-{transport}-{mode}-3",
                },
            )
        )
        assert unedited["code"] == "gone"

        # Poll from 0: this knowledge base's feed, no drafts, and a cursor.
        page = body(
            await call(
                "poll_resource_events",
                resource_type="knowledge_base",
                resource_id=kb,
                after_sequence=0,
            )
        )
        mine = [e["type"] for e in page["events"] if e["article_id"] == data.password]
        assert mine == ["published", "saved", "saved", "unpublished"]
        assert {e["article_id"] for e in page["events"]} == {data.password, data.billing}
        sequences = [e["sequence"] for e in page["events"]]
        assert sequences == sorted(sequences)
        assert page["events"][-1]["updated_at"] > reread["updated_at"]
        assert page["has_more"] is False
        cursor = page["next_sequence"]
        assert cursor >= sequences[-1]

        # Poll from the cursor: nothing new, then exactly what happened since.
        empty = body(
            await call(
                "poll_resource_events",
                resource_type="knowledge_base",
                resource_id=kb,
                after_sequence=cursor,
            )
        )
        assert empty["events"] == [] and empty["next_sequence"] == cursor
        billed = run_kbes(
            "article", "save", "--db", db, "--kb", kb, data.billing, "--content", "Invoices: 1st."
        )
        assert billed.returncode == 0, billed.stderr
        later = body(
            await call(
                "poll_resource_events",
                resource_type="knowledge_base",
                resource_id=kb,
                after_sequence=cursor,
            )
        )
        assert [(e["type"], e["article_id"]) for e in later["events"]] == [("saved", data.billing)]
        assert later["next_sequence"] > cursor
