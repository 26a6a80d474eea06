"""A time whose UTC instant falls outside 0001-01-01..9999-12-31 (`0001-01-01T00:00:00+05:30`)
is bad input at every door: `invalid_argument` naming the field for agents, exit 2 naming the
flag for people, an `invalid` finding for a citation line. It once reached `format_timestamp`
and raised OverflowError: a traceback, or `internal_error` over MCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.client import Client
from mcp_harness import text

from kbes import KnowledgeBaseStore, call_tool
from kbes.cli import main
from kbes.server.mcp_server import KbesMCP
from kbes.tools import HISTORY_TOOLS, TOOLS
from kbes.tools.codes import KbesError
from kbes.tools.diff import DIFF_TOOL

OUT_OF_RANGE = ["0001-01-01T00:00:00+05:30", "9999-12-31T23:59:59-05:00"]


@pytest.fixture
def article(store: KnowledgeBaseStore, kb: str) -> str:
    return str(store.add_article(kb, "VPN", "Connect to vpn.example.", publish=True))


def head(store: KnowledgeBaseStore) -> int:
    return store.head()


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_edit_and_diff_refuse_the_time_naming_the_field(
    store: KnowledgeBaseStore, kb: str, article: str, when: str
) -> None:
    before = head(store)
    edit = {"knowledge_base_id": kb, "article_id": article, "content": "x",
            "expected_version": when, "idempotency_key": "k"}  # fmt: skip
    with pytest.raises(KbesError) as info:
        call_tool(store, "edit_knowledge_article", edit)
    error = info.value.to_dict()
    assert (error["code"], error["field"]) == ("invalid_argument", "expected_version")
    assert "out of range" in error["message"]
    assert when in error["message"]

    with pytest.raises(KbesError) as info:
        DIFF_TOOL.parse({"knowledge_base_id": kb, "article_id": article, "since_version": when})
    error = info.value.to_dict()
    assert (error["code"], error["field"]) == ("invalid_argument", "since_version")
    assert head(store) == before


def test_over_mcp_it_is_invalid_argument_not_internal_error(
    store: KnowledgeBaseStore, kb: str, article: str
) -> None:
    server = KbesMCP(store, grants=None, tools=[*TOOLS.values(), *HISTORY_TOOLS])
    when = OUT_OF_RANGE[0]

    async def session() -> list[dict[str, Any]]:
        async with Client(server.server) as client:
            edit = await client.call_tool(
                "edit_knowledge_article",
                {"knowledge_base_id": kb, "article_id": article, "content": "x",
                 "expected_version": when, "idempotency_key": "k"},
            )  # fmt: skip
            diff = await client.call_tool(
                "diff_knowledge_article",
                {"knowledge_base_id": kb, "article_id": article, "since_version": when},
            )
        assert edit.is_error and diff.is_error
        return [json.loads(text(edit)), json.loads(text(diff))]

    edit, diff = anyio.run(session)
    assert (edit["code"], edit["field"]) == ("invalid_argument", "expected_version")
    assert (diff["code"], diff["field"]) == ("invalid_argument", "since_version")


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_kbes_tool_prints_the_error_json(runner: CliRunner, kb: str, article: str, when: str):
    result = runner.invoke(
        main,
        ["tool", "edit_knowledge_article", f"knowledge_base_id={kb}", f"article_id={article}",
         "content=x", f"expected_version={when}", "idempotency_key=k"],
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["code"] == "invalid_argument"


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_article_show_at_is_exit_2_naming_the_flag(
    runner: CliRunner, kb: str, article: str, when: str
) -> None:
    result = runner.invoke(main, ["article", "show", "--kb", kb, article, "--at", when])
    assert result.exit_code == 2, result.output
    assert "--at" in result.stderr
    assert "out of range" in result.stderr


def write_citation(tmp_path: Path, kb: str, article: str, when: str) -> Path:
    path = tmp_path / "citations.jsonl"
    line = {"knowledge_base_id": kb, "article_id": article, "updated_at": when}
    path.write_text(json.dumps(line) + "\n")
    return path


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_audit_as_of_is_exit_2_naming_the_flag(
    runner: CliRunner, tmp_path: Path, kb: str, article: str, when: str
) -> None:
    citations = write_citation(tmp_path, kb, article, "2026-11-30T09:00:00Z")
    result = runner.invoke(main, ["audit", str(citations), "--as-of", when])
    assert result.exit_code == 2, result.output
    assert "--as-of" in result.stderr
    assert "out of range" in result.stderr


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_an_audited_citation_out_of_range_is_invalid(
    runner: CliRunner, tmp_path: Path, kb: str, article: str, when: str
) -> None:
    citations = write_citation(tmp_path, kb, article, when)
    result = runner.invoke(main, ["audit", str(citations), "--json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)["citations"]
    assert entry["class"] == "invalid"
    assert "out of range" in entry["reason"]
