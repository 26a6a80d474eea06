"""Every tool answer, byte for byte: one fixed scenario (fixed clock, fixed ids) through the MCP
server (in process, the SDK's client) and `kbes tool`, compared with the answers recorded in
tests/fixtures/golden_answers.jsonl. Refactors that keep behaviour keep this file; a change an
agent or a person would see fails here first.

Recording the answers anew (only for a change meant to alter them):
    KBES_GOLDEN_RECORD=1 pytest tests/test_golden_answers.py"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.client import Client

from kbes import HISTORY_TOOLS, TOOLS, KnowledgeBaseStore, SystemClock, open_store
from kbes.cli import main
from kbes.domain import article as article_module
from kbes.domain import knowledge_base as knowledge_base_module
from kbes.server.mcp_server import KbesMCP

FIXTURE = Path(__file__).parent / "fixtures" / "golden_answers.jsonl"
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


class World:
    """The scenario's fixed time and ids: the clock moves only when a step moves it, and each
    new aggregate takes the next id of a counter."""

    def __init__(self) -> None:
        self.now = START
        self.ids = 0

    def uuid(self) -> UUID:
        self.ids += 1
        return UUID(int=0x6B6265730000400080000000000000 + self.ids)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    world = World()
    monkeypatch.setattr(SystemClock, "now", lambda self: world.now)
    monkeypatch.setattr(article_module, "uuid4", world.uuid)
    monkeypatch.setattr(knowledge_base_module, "uuid4", world.uuid)
    return world


class Doors:
    """The two doors an agent's call comes through, each answer kept as the exact text sent."""

    def __init__(self, store: KnowledgeBaseStore, db: Path, world: World) -> None:
        self.store, self.db, self.world = store, db, world
        self.server = KbesMCP(
            store, grants=None, edits="allow", tools=[*TOOLS.values(), *HISTORY_TOOLS]
        )
        self.answers: list[dict[str, Any]] = []

    def mcp(self, step: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async def call() -> Any:
            async with Client(self.server.server) as client:
                return await client.call_tool(name, arguments)

        answer = anyio.run(call)
        sent = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.answers.append({"step": step, "door": "mcp", "result": json.dumps(sent)})
        parsed: dict[str, Any] = json.loads(answer.content[0].text)
        return parsed

    def cli(self, step: str, name: str, *arguments: str) -> dict[str, Any]:
        result = CliRunner().invoke(main, ["tool", name, "--db", str(self.db), *arguments])
        self.answers.append(
            {"step": step, "door": "cli", "exit": result.exit_code, "text": result.stdout}
        )
        parsed: dict[str, Any] = json.loads(result.stdout)
        return parsed

    def both(self, step: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call that writes nothing, through each door in turn."""
        answer = self.mcp(step, name, arguments)
        self.cli(step, name, *(f"{key}:={json.dumps(value)}" for key, value in arguments.items()))
        return answer

    def tick(self, seconds: float = 60) -> None:
        self.world.now += timedelta(seconds=seconds)


def scenario(doors: Doors) -> None:
    """Searches, reads, edits (accepted, replayed, stale, gone, unknown), bad arguments, feed
    pages and diffs, with people's changes in between."""
    store = doors.store
    kb = str(store.create_knowledge_base("Support"))
    other = str(store.create_knowledge_base("Billing"))
    doors.tick()
    reset = str(
        store.add_article(kb, "Reset your password", "Open Settings, then Security.", publish=True)
    )
    refunds = str(store.add_article(kb, "Refunds", "Refunds take 5 days.", publish=True))
    draft = str(store.add_article(kb, "Secret plans", "The word is xylophonic."))
    elsewhere = str(store.add_article(other, "Invoices", "Invoices are monthly.", publish=True))
    unknown = str(UUID(int=7))
    doors.tick()

    search = "search_knowledge_base"
    doors.both("search, hits", search, {"knowledge_base_id": kb, "query": "password"})
    doors.both(
        "search, limit", search, {"knowledge_base_id": kb, "query": "days password", "limit": 1}
    )
    doors.both("search, no hits", search, {"knowledge_base_id": kb, "query": "xylophonic"})
    doors.both("search, other kb", search, {"knowledge_base_id": other, "query": "invoices"})
    doors.both("search, unknown kb", search, {"knowledge_base_id": unknown, "query": "refunds"})
    doors.both("search, blank query", search, {"knowledge_base_id": kb, "query": "   "})
    doors.both("search, one-letter query", search, {"knowledge_base_id": kb, "query": "a"})
    doors.both(
        "search, limit too big", search, {"knowledge_base_id": kb, "query": "refunds", "limit": 99}
    )
    doors.both(
        "search, limit a string",
        search,
        {"knowledge_base_id": kb, "query": "refunds", "limit": "5"},
    )
    doors.both("search, missing query", search, {"knowledge_base_id": kb})
    doors.both(
        "search, extra field", search, {"knowledge_base_id": kb, "query": "refunds", "page": 2}
    )
    doors.both("search, bad kb id", search, {"knowledge_base_id": "not-an-id", "query": "refunds"})

    read = "read_knowledge_article"
    cited = doors.both("read", read, {"knowledge_base_id": kb, "article_id": refunds})
    doors.both("read, draft", read, {"knowledge_base_id": kb, "article_id": draft})
    doors.both("read, other kb's article", read, {"knowledge_base_id": kb, "article_id": elsewhere})
    doors.both("read, unknown article", read, {"knowledge_base_id": kb, "article_id": unknown})
    doors.both("read, bad article id", read, {"knowledge_base_id": kb, "article_id": "zz"})
    doors.both("read, article id a number", read, {"knowledge_base_id": kb, "article_id": 5})

    edit = "edit_knowledge_article"
    first = cited["updated_at"]
    change = {
        "knowledge_base_id": kb,
        "article_id": refunds,
        "content": "Refunds take 3 working days.",
        "expected_version": first,
        "idempotency_key": "refund-fix",
    }
    doors.tick()
    edited = doors.mcp("edit, accepted", edit, change)
    doors.tick()
    doors.mcp("edit, replayed", edit, change)
    doors.cli("edit, replayed (cli)", edit, *(f"{k}:={json.dumps(v)}" for k, v in change.items()))
    doors.mcp("edit, key reused", edit, {**change, "content": "Refunds take a week."})
    doors.mcp("edit, stale", edit, {**change, "idempotency_key": "second", "content": "Other."})
    retitle = {**change, "expected_version": edited["updated_at"], "idempotency_key": "retitle"}
    doors.cli(
        "edit, retitled (cli)",
        edit,
        *(f"{k}:={json.dumps(v)}" for k, v in {**retitle, "title": "Refund times"}.items()),
    )
    doors.mcp(
        "edit, unknown article", edit, {**change, "article_id": unknown, "idempotency_key": "u"}
    )
    doors.mcp("edit, draft", edit, {**change, "article_id": draft, "idempotency_key": "d"})
    doors.mcp("edit, bad version", edit, {**change, "expected_version": "yesterday"})
    doors.mcp("edit, version no zone", edit, {**change, "expected_version": "2026-12-01T09:00:00"})
    doors.mcp("edit, empty content", edit, {**change, "content": ""})
    doors.mcp("edit, long title", edit, {**change, "idempotency_key": "long", "title": "t" * 1000})
    doors.mcp("edit, title with a newline", edit, {**change, "title": "a\nb"})
    doors.mcp(
        "edit, missing key", edit, {k: v for k, v in change.items() if k != "idempotency_key"}
    )
    doors.cli(
        "search, limit=5 a string (cli)",
        search,
        f"knowledge_base_id={kb}",
        "query=refunds",
        "limit=5",
    )
    doors.tick()
    store.save_article(kb, reset, content="Open Settings, then Security, then Reset.")
    doors.tick()
    store.unpublish_article(kb, refunds)
    doors.both("read, gone", read, {"knowledge_base_id": kb, "article_id": refunds})
    doors.mcp("edit, gone", edit, {**change, "idempotency_key": "gone"})
    doors.mcp("edit, gone but replayed", edit, change)
    doors.both("search, after unpublish", search, {"knowledge_base_id": kb, "query": "refunds"})

    poll = "poll_resource_events"
    feed = {"resource_type": "knowledge_base", "resource_id": kb}
    page = doors.both("poll, first page", poll, {**feed, "limit": 3})
    doors.both("poll, next page", poll, {**feed, "after_sequence": page["next_sequence"]})
    doors.both("poll, past the head", poll, {**feed, "after_sequence": 10_000})
    doors.both("poll, other kb", poll, {"resource_type": "knowledge_base", "resource_id": other})
    doors.both("poll, unknown kb", poll, {**feed, "resource_id": unknown})
    doors.both("poll, bad type", poll, {**feed, "resource_type": "article"})
    doors.both("poll, negative after", poll, {**feed, "after_sequence": -1})
    doors.both("poll, limit zero", poll, {**feed, "limit": 0})

    diff = "diff_knowledge_article"
    reread = doors.both("read, saved", read, {"knowledge_base_id": kb, "article_id": reset})
    at = {"knowledge_base_id": kb, "article_id": reset}
    doors.both("diff, since current", diff, {**at, "since_version": reread["updated_at"]})
    doors.both("diff, since published", diff, {**at, "since_version": cited["updated_at"]})
    doors.both("diff, unknown version", diff, {**at, "since_version": "2020-01-01T00:00:00Z"})
    doors.both("diff, unpublished", diff, {**at, "article_id": refunds, "since_version": first})
    doors.both("diff, bad version", diff, {**at, "since_version": "soon"})


def run(tmp_path: Path, world: World) -> list[dict[str, Any]]:
    db = tmp_path / "golden.sqlite"
    store = open_store(db)
    try:
        doors = Doors(store, db, world)
        scenario(doors)
        return doors.answers
    finally:
        store.close()


def lines(answers: list[dict[str, Any]]) -> Iterator[str]:
    for answer in answers:
        yield json.dumps(answer, ensure_ascii=False) + "\n"


def test_every_tool_answer_is_the_recorded_one(tmp_path: Path, world: World) -> None:
    produced = "".join(lines(run(tmp_path, world)))
    if os.environ.get("KBES_GOLDEN_RECORD") == "1":
        FIXTURE.write_text(produced, encoding="utf-8")
    recorded = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(recorded) > 80
    assert produced.splitlines(keepends=True) == recorded
