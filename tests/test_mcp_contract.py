"""The live MCP server enforces the tool contract: every bad input of the store issue comes back
as a readable tool error naming the field and writes nothing; an unknown tool is a protocol
error; an ungranted knowledge base is indistinguishable from a random id; `kbes serve` refuses
to start without a grant. All through the SDK's real client and a real `kbes serve` process."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Annotated, Any

import mcp_types as types
import msgspec
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import (
    Elicitations,
    Seed,
    body,
    current_version,
    error,
    event_count,
    probe_calls,
    run_kbes,
    seed,
    stdio_client,
)

from kbes import open_store
from kbes.cli import main
from kbes.server.mcp_server import KbesMCP
from kbes.tools import TOOLS, Tool

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("contract") / "kbes.sqlite")


def bad_inputs(data: Seed) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the field the error must name): the store issue's list of bad inputs
    (missing required field, query of 1 or 201 characters, limit 0 or 21, poll limit 101,
    negative after_sequence, unknown field, non-date expected_version, empty idempotency key,
    wrong types), each otherwise a valid call that would write if it got through."""
    version = current_version(data.db, data.kb, data.password)
    search = {"knowledge_base_id": data.kb, "query": "password"}
    read = {"knowledge_base_id": data.kb, "article_id": data.password}
    edit = {
        **read,
        "content": "Changed.",
        "expected_version": version,
        "idempotency_key": "bad-input-key",
    }
    poll = {"resource_type": "knowledge_base", "resource_id": data.kb}

    def without(args: dict[str, Any], key: str) -> dict[str, Any]:
        return {k: v for k, v in args.items() if k != key}

    cases: list[tuple[str, dict[str, Any], str]] = []
    for name, good in (
        ("search_knowledge_base", search),
        ("read_knowledge_article", read),
        ("edit_knowledge_article", edit),
        ("poll_resource_events", poll),
    ):
        for key in good:  # every required field, missing
            cases.append((name, without(good, key), key))
        cases.append((name, {**good, "colour": "red"}, "colour"))  # unknown field
    cases += [
        ("search_knowledge_base", {**search, "query": "p"}, "query"),
        ("search_knowledge_base", {**search, "query": "p" * 201}, "query"),
        ("search_knowledge_base", {**search, "limit": 0}, "limit"),
        ("search_knowledge_base", {**search, "limit": 21}, "limit"),
        ("search_knowledge_base", {**search, "limit": "5"}, "limit"),
        ("search_knowledge_base", {**search, "query": 12}, "query"),
        ("search_knowledge_base", {**search, "knowledge_base_id": None}, "knowledge_base_id"),
        ("read_knowledge_article", {**read, "article_id": 7}, "article_id"),
        ("edit_knowledge_article", {**edit, "expected_version": "yesterday"}, "expected_version"),
        (
            "edit_knowledge_article",
            {**edit, "expected_version": "2026-11-30T09:00:00"},  # no offset
            "expected_version",
        ),
        ("edit_knowledge_article", {**edit, "expected_version": 1764493200}, "expected_version"),
        ("edit_knowledge_article", {**edit, "idempotency_key": ""}, "idempotency_key"),
        ("edit_knowledge_article", {**edit, "content": ""}, "content"),
        ("edit_knowledge_article", {**edit, "content": ["Changed."]}, "content"),
        ("edit_knowledge_article", {**edit, "title": 5}, "title"),
        ("poll_resource_events", {**poll, "limit": 101}, "limit"),
        ("poll_resource_events", {**poll, "limit": 0}, "limit"),
        ("poll_resource_events", {**poll, "after_sequence": -1}, "after_sequence"),
        ("poll_resource_events", {**poll, "after_sequence": 1.5}, "after_sequence"),
        ("poll_resource_events", {**poll, "after_sequence": "0"}, "after_sequence"),
    ]
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_bad_input_is_invalid_argument_and_an_unknown_tool_a_protocol_error(
    data: Seed, mode: str
) -> None:
    """Both protocol eras (2026-07-28 and the 2025 handshake); --edits ask with a client that
    would approve, so a bad edit that slipped through would be written."""
    asked = Elicitations("accept")
    cases = bad_inputs(data)
    before = event_count(data.db)
    async with stdio_client(
        data.db, "--grant", data.kb, mode=mode, elicitation_callback=asked
    ) as client:
        for name, arguments, field in cases:
            result = await client.call_tool(name, arguments)
            err = error(result)
            assert err["code"] == "invalid_argument", (name, arguments, err)
            assert err["field"] == field, (name, arguments, err)
            assert field in err["message"]
            assert result.structured_content is None
        # An unknown tool name is a protocol error, not a tool result; the session lives on.
        with pytest.raises(MCPError) as raised:
            await client.call_tool("delete_knowledge_base", {"knowledge_base_id": data.kb})
        assert raised.value.error.code == types.INVALID_PARAMS
        assert "delete_knowledge_base" in raised.value.error.message
        ok = await client.call_tool(
            "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
        )
        assert not ok.is_error
    assert event_count(data.db) == before, "a bad input wrote an event"
    assert asked.messages == [], "a bad input was put to the user for approval"


def normalized(result: types.CallToolResult, *ids: str) -> str:
    """The whole result as the client sees it, with the ids the caller passed masked."""
    text = json.dumps(result.model_dump(mode="json", by_alias=True), sort_keys=True)
    for n, value in enumerate(ids):
        text = text.replace(value, f"<id{n}>")
    return text


@pytest.mark.slow
async def test_ungranted_and_random_ids_give_identical_results_on_all_four_tools(
    data: Seed,
) -> None:
    """The server is granted `kb` only. `other_kb` exists, holds a published article that
    matches the query, and its real current version is passed to the edit, so any leak past
    the grant would show up as a different answer (or a write)."""
    random_kb, random_article = str(uuid.uuid4()), str(uuid.uuid4())
    other_version = current_version(data.db, data.other_kb, data.other_article)
    asked = Elicitations("accept")

    def calls(kb: str, article: str) -> list[tuple[str, dict[str, Any]]]:
        return probe_calls(kb, article, other_version, "Leaked edit.", "grant-probe")

    before = event_count(data.db)
    async with stdio_client(data.db, "--grant", data.kb, elicitation_callback=asked) as client:
        for (name, ungranted), (_, random) in zip(
            calls(data.other_kb, data.other_article),
            calls(random_kb, random_article),
            strict=True,
        ):
            a = await client.call_tool(name, ungranted)
            b = await client.call_tool(name, random)
            assert error(a)["code"] == "not_found", name
            assert normalized(a, data.other_kb, data.other_article) == normalized(
                b, random_kb, random_article
            ), name
        # The granted knowledge base answers, so the grant (not the data) made the difference.
        ok = await client.call_tool(
            "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
        )
        assert [hit["article_id"] for hit in body(ok)["hits"]] == [data.password]
    assert event_count(data.db) == before
    assert asked.messages == [], "an edit of an ungranted knowledge base was put to the user"


@pytest.mark.slow
def test_serve_refuses_to_start_without_a_grant(data: Seed) -> None:
    done = run_kbes("serve", "--db", str(data.db))
    assert done.returncode == 2
    assert "--grant KB_ID" in done.stderr and "--grant-all" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grant", "{random}"], "no knowledge base"),
        (["--grant", "not-an-id"], "no knowledge base"),
        (["--grant", " {kb} "], "no knowledge base"),  # a padded id is no id (kbes.domain.ids)
        (["--grant", "{kb}", "--grant-all"], "not both"),
        (["--grant-all", "--tokens", "{tokens}"], "--tokens applies to --http"),
        (["--grant-all", "--http", "0.0.0.0:0"], "without --tokens"),
        (["--grant-all", "--http", "localhost:http"], "[HOST:]PORT"),
        (["--grant-all", "--http", "0", "--tokens", "{bad_tokens}"], "line 2"),
        (["--grant", "{kb}", "--http", "0", "--tokens", "{wide_tokens}"], "not granted"),
    ],
)
def test_serve_refuses_bad_options_clearly(
    data: Seed, tmp_path: Path, args: list[str], message: str
) -> None:
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"ci {'t' * 32} *\n")
    bad = tmp_path / "bad.txt"
    bad.write_text(f"# comment\nci {'t' * 32}\n")
    wide = tmp_path / "wide.txt"
    wide.write_text(f"ci {'t' * 32} {data.other_kb}\n")
    values = {
        "random": str(uuid.uuid4()),
        "kb": data.kb,
        "tokens": str(tokens),
        "bad_tokens": str(bad),
        "wide_tokens": str(wide),
    }
    argv = ["serve", "--db", str(data.db), *(a.format(**values) for a in args)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert message in result.output


class EchoRequest(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    knowledge_base_id: str
    note: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]


class EchoResult(msgspec.Struct, kw_only=True, frozen=True):
    knowledge_base_id: str
    note: str


async def test_extra_tools_are_served_like_the_four(data: Seed) -> None:
    """Another `Tool` passed to the server is listed from its own schemas, validated, confined to
    the grants, and (not being read-only) put to the user before it runs."""

    def echo(store: Any, request: EchoRequest, kb: Any) -> EchoResult:
        # The grants were checked before the answer runs (Tool.admit), as for the four.
        return EchoResult(knowledge_base_id=request.knowledge_base_id, note=request.note)

    def tool(name: str, annotations: dict[str, bool]) -> Tool:
        return Tool(
            name=name,
            title=name.replace("_", " ").capitalize(),
            description=f"{name}: echo a note for a granted knowledge base.",
            request=EchoRequest,
            result=EchoResult,
            annotations=annotations,
            answer=echo,
        )

    reader = tool("echo_note", {"readOnlyHint": True, "destructiveHint": False})
    writer = tool("write_note", {"readOnlyHint": False, "destructiveHint": True})
    store = open_store(data.db)
    try:
        server = KbesMCP(
            store, grants=frozenset({data.kb}), tools=[*TOOLS.values(), reader, writer]
        )
        asked = Elicitations("accept")
        async with Client(server.server, elicitation_callback=asked) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert list(listed) == [*TOOLS, "echo_note", "write_note"]
            assert listed["echo_note"].input_schema == reader.input_schema()
            assert listed["echo_note"].output_schema == reader.output_schema()
            args = {"knowledge_base_id": data.kb, "note": "hello"}
            assert body(await client.call_tool("echo_note", args)) == args
            assert asked.messages == []
            bad = error(await client.call_tool("echo_note", {**args, "note": ""}))
            assert (bad["code"], bad["field"]) == ("invalid_argument", "note")
            hidden = error(
                await client.call_tool("echo_note", {**args, "knowledge_base_id": data.other_kb})
            )
            assert hidden["code"] == "not_found"
            assert body(await client.call_tool("write_note", args)) == args
            assert len(asked.messages) == 1 and "write_note" in asked.messages[0]
    finally:
        store.close()
