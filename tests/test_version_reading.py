"""One reading of a version at every door (issue 18, defect 6). With v2 at
`…20:00:00.000001Z` and v3 at `…20:00:00.000002Z`, the tools' parser rounded
`…20:00:00.0000015Z` to v3 and the edit overwrote it, while `kbes audit`, `kbes article show
--at` and pinned resource URIs truncated the same text to v2. Now every door reads a version
through `kbes.domain.clock.parse_timestamp`, which refuses a fraction finer than a microsecond
(trailing zeros past the sixth digit are exact, and read as they are)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from tool_calls import call, fails

from kbes import KbesError, SimulatedClock, call_tool, open_store, parse_timestamp
from kbes.cli import main
from kbes.domain.errors import NotATime
from kbes.log.history import History
from kbes.server.resources import read_resource, version_uri
from kbes.tools.wire import Citation

ROOT = Path(__file__).resolve().parent.parent
V2 = "2026-12-01T20:00:00.000001Z"
V3 = "2026-12-01T20:00:00.000002Z"
BETWEEN = "2026-12-01T20:00:00.0000015Z"
"""Names no version: msgspec rounded it to v3, `datetime.fromisoformat` truncated it to v2."""
V2_PADDED = "2026-12-01T20:00:00.0000010Z"
"""v2 exactly, with a trailing zero past the microseconds."""


@pytest.fixture
def versions(db_path: Path) -> dict[str, str]:
    """An article published at v2 (drafted at …00.000000Z) and saved at v3."""
    start = datetime(2026, 12, 1, 20, 0, 0, tzinfo=UTC)
    store = open_store(db_path, clock=SimulatedClock(start))
    try:
        kb = str(store.create_knowledge_base("Support"))
        article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
        store.save_article(kb, article, content="Refunds take three days.")
        read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
        assert read["updated_at"] == V3
        return {"kb": kb, "article": article}
    finally:
        store.close()


def edit(ids: dict[str, str], version: str) -> dict[str, str]:
    return {
        "knowledge_base_id": ids["kb"], "article_id": ids["article"],
        "content": "Refunds take one day.", "expected_version": version,
        "idempotency_key": f"edit-{version}",
    }  # fmt: skip


def test_an_edit_citing_no_version_is_refused_and_writes_nothing(
    db_path: Path, versions: dict[str, str]
) -> None:
    store = open_store(db_path)
    try:
        head = store.head()
        for arguments in (edit(versions, BETWEEN), json.dumps(edit(versions, BETWEEN))):
            with pytest.raises(KbesError) as refused:
                call_tool(store, "edit_knowledge_article", arguments)
            error = refused.value.to_dict()
            assert error["code"] == "invalid_argument"
            assert error["field"] == "expected_version"
            assert "7 fractional digits, finer than a microsecond" in error["message"]
        assert store.head() == head
        read = call(store, "read_knowledge_article", knowledge_base_id=versions["kb"],
                    article_id=versions["article"])  # fmt: skip
        assert read["content"] == "Refunds take three days."
        # The exact spelling with a trailing zero is v2: a conflict with v3, not a match.
        conflict = fails(store, "edit_knowledge_article", **edit(versions, V2_PADDED))
        assert (conflict["code"], conflict["expected_version"]) == ("version_conflict", V2)
        done = call(store, "edit_knowledge_article", **edit(versions, V3))
        assert done["replay"] is False
    finally:
        store.close()


def test_the_diff_tool_reads_since_version_the_same_way(
    db_path: Path, versions: dict[str, str]
) -> None:
    store = open_store(db_path)
    try:
        ids = {"knowledge_base_id": versions["kb"], "article_id": versions["article"]}
        refused = fails(store, "diff_knowledge_article", **ids, since_version=BETWEEN)
        assert (refused["code"], refused["field"]) == ("invalid_argument", "since_version")
        diff = call(store, "diff_knowledge_article", **ids, since_version=V2_PADDED)
        assert (diff["since_version"], diff["changed"]) == (V2, True)
    finally:
        store.close()


def test_a_pinned_resource_uri_reads_the_version_the_same_way(
    db_path: Path, versions: dict[str, str]
) -> None:
    store = open_store(db_path)
    try:

        def uri(version: str) -> str:
            kb, article = versions["kb"], versions["article"]
            return version_uri(
                Citation(knowledge_base_id=kb, article_id=article, updated_at=version)
            )

        with pytest.raises(KbesError) as refused:
            read_resource(store, uri(BETWEEN))
        assert refused.value.to_dict()["code"] == "invalid_argument"
        assert "finer than a microsecond" in refused.value.message
        pinned = read_resource(store, uri(V2_PADDED))
        assert (pinned.last_modified, "five days" in pinned.text) == (V2, True)
    finally:
        store.close()


def test_kbes_article_show_at_reads_the_version_the_same_way(
    runner: CliRunner, versions: dict[str, str]
) -> None:
    args = ["article", "show", "--kb", versions["kb"], versions["article"], "--json", "--at"]
    refused = runner.invoke(main, [*args, BETWEEN])
    assert refused.exit_code == 2, refused.output
    assert "--at" in refused.output and "finer than a microsecond" in refused.output
    shown = runner.invoke(main, [*args, V2_PADDED])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["updated_at"] == V2


def test_kbes_audit_reads_the_citation_the_same_way(
    runner: CliRunner, tmp_path: Path, versions: dict[str, str]
) -> None:
    citations = tmp_path / "citations.jsonl"
    lines = [
        {"knowledge_base_id": versions["kb"], "article_id": versions["article"], "updated_at": v}
        for v in (BETWEEN, V2_PADDED, V3)
    ]
    citations.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = runner.invoke(main, ["audit", str(citations), "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)["citations"]
    assert [e["class"] for e in entries] == ["invalid", "changed", "current"]
    assert "finer than a microsecond" in entries[0]["reason"]


def test_the_python_api_reads_a_version_the_same_way(
    db_path: Path, versions: dict[str, str]
) -> None:
    with pytest.raises(ValueError, match="finer than a microsecond"):
        parse_timestamp(BETWEEN)
    assert parse_timestamp(V2_PADDED) == parse_timestamp(V2)
    store = open_store(db_path)
    try:
        history = History.of(store)
        with pytest.raises(NotATime):
            history.article_at(versions["article"], BETWEEN)
        assert history.article_at(versions["article"], V2_PADDED).updated_at == V2
    finally:
        store.close()


def test_docs_say_how_a_version_is_read() -> None:
    page = " ".join((ROOT / "docs" / "tools.md").read_text(encoding="utf-8").split())
    assert "A fraction finer than a microsecond is refused" in page
    assert "tests/test_version_reading.py" in page
    with pytest.raises(ValueError):
        parse_timestamp("2026-12-01T20:00Z")  # the page says: seconds are required


@pytest.mark.slow
def test_a_real_server_reads_a_version_the_same_way(
    db_path: Path, versions: dict[str, str]
) -> None:
    """Over MCP stdio, with the SDK's client: the edit and the pinned URI refuse `BETWEEN`,
    and the article is still at v3 afterwards."""
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp_harness import body, stdio_client

    pinned = version_uri(
        Citation(knowledge_base_id=versions["kb"], article_id=versions["article"],
                 updated_at=BETWEEN)
    )  # fmt: skip
    outcome: dict[str, object] = {}

    async def session() -> None:
        async with stdio_client(db_path, "--grant-all", "--edits", "allow") as client:
            outcome["edit"] = body(await client.call_tool("edit_knowledge_article",
                                                          edit(versions, BETWEEN)))  # fmt: skip
            try:
                await client.read_resource(pinned)
            except MCPError as e:
                outcome["pinned"] = e.data
            ids = {"knowledge_base_id": versions["kb"], "article_id": versions["article"]}
            read = await client.call_tool("read_knowledge_article", ids)
            outcome["now"] = body(read)["updated_at"]

    anyio.run(session)
    refused = outcome["edit"]
    assert isinstance(refused, dict)
    assert (refused["code"], refused["field"]) == ("invalid_argument", "expected_version")
    pinned_error = outcome["pinned"]
    assert isinstance(pinned_error, dict) and pinned_error["code"] == "invalid_argument"
    assert outcome["now"] == V3
