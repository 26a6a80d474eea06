"""`kbes serve` over stdio answers the MCP handshake before the SDK has loaded (`kbes.prelude`).

The prelude must be invisible: for every handshake-era protocol version the SDK supports, the
answers to `initialize`, `tools/list` and `ping` are the very bytes the SDK server sends when it
runs alone (`--no-prelude`), with and without --history-tools, for several grants. A whole
session through the prelude works with the SDK's real client (every tool, errors, elicitation
after the handover), and what the prelude cannot be sure of goes to the SDK untouched."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_harness import KBES, Elicitations, Seed, article_events, body, error, seed
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from kbes import open_store
from kbes.prelude import (
    Answers,
    Handover,
    Prelude,
    ProtocolVersions,
    _Suppress,
    protocol_versions,
    response,
)
from kbes.tools import HISTORY_TOOLS, TOOLS

ODD_NAME = 'Ünïcode "quoted" \\ back\tslash / 🙂 \u2028 end'


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    data = seed(tmp_path_factory.mktemp("prelude") / "kbes.sqlite")
    store = open_store(data.db)
    try:
        store.create_knowledge_base(ODD_NAME)
    finally:
        store.close()
    return data


def odd_kb(data: Seed) -> str:
    store = open_store(data.db)
    try:
        store.catch_up()
        return next(
            row["knowledge_base_id"]
            for row in store.views.knowledge_bases()
            if row["name"] == ODD_NAME
        )
    finally:
        store.close()


# The same bytes, with and without the prelude ------------------------------------------------


def handshake(version: str) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {"elicitation": {}, "roots": {"listChanged": True}},
                "clientInfo": {"name": "prelude-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "list-ü", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]


def start(db: Path, serve_args: list[str], *, prelude: bool) -> subprocess.Popen[bytes]:
    flag = "--prelude" if prelude else "--no-prelude"
    return subprocess.Popen(
        [KBES, "serve", "--db", str(db), flag, *serve_args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def answers(process: subprocess.Popen[bytes], messages: list[dict[str, Any]]) -> dict[Any, bytes]:
    """Send `messages` at once; the raw answer line of each request, by id."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()
    wanted = {m["id"] for m in messages if "id" in m}
    lines: dict[Any, bytes] = {}
    try:
        while wanted - lines.keys():
            line = process.stdout.readline()
            assert line, f"kbes serve closed stdout: {process.communicate()[1].decode()}"
            lines[json.loads(line)["id"]] = line
    finally:
        process.kill()  # not waiting for the background import: its result is not needed
        _, stderr = process.communicate()
    assert b"differently" not in stderr, stderr.decode()
    return lines


GRANTS = ["grant all", "one grant, history tools", "one grant", "two grants, history tools"]
CASES = [
    # Every handshake version, and each way of granting, with and without history tools (the
    # initialize answer varies only in protocolVersion; tools/list not at all).
    *((version, GRANTS[i % len(GRANTS)]) for i, version in enumerate(HANDSHAKE_PROTOCOL_VERSIONS)),
    ("2099-01-01", "one grant"),  # unknown: the SDK counter-offers; the prelude hands over
]


@pytest.mark.parametrize(("version", "grants"), CASES)
def test_handshake_answers_are_the_sdks_bytes(data: Seed, version: str, grants: str) -> None:
    serve_args = {
        "grant all": ["--grant-all"],
        "one grant, history tools": ["--grant", data.kb, "--history-tools"],
        "one grant": ["--grant", data.kb],
        "two grants, history tools": [
            *("--grant", data.kb, "--grant", odd_kb(data), "--history-tools"),
        ],
    }[grants]
    messages = handshake(version)
    with_prelude = start(data.db, serve_args, prelude=True)
    sdk_alone = start(data.db, serve_args, prelude=False)
    got = answers(with_prelude, messages)  # first: killing it early spares its SDK import
    expected = answers(sdk_alone, messages)
    assert {k: json.loads(v) for k, v in got.items()} == {
        k: json.loads(v) for k, v in expected.items()
    }
    assert got == expected  # byte for byte
    listed = json.loads(got["list-ü"])["result"]["tools"]
    assert len(listed) == len(TOOLS) + (len(HISTORY_TOOLS) if "history" in grants else 0)
    assert "Knowledge bases available" in json.loads(got[1])["result"]["instructions"]


def test_the_prelude_reads_the_sdks_own_version_registry() -> None:
    """Derived, not copied: and without importing the SDK (the point of the prelude)."""
    code = (
        "import sys, json; import kbes.cli.serve; from kbes.prelude import protocol_versions; "
        "v = protocol_versions(); "
        "print(json.dumps([v.handshake, v.modern, sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic'))]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    handshake_versions, modern, sdk_modules = json.loads(done.stdout)
    assert handshake_versions == list(HANDSHAKE_PROTOCOL_VERSIONS)
    assert modern == list(MODERN_PROTOCOL_VERSIONS)
    assert sdk_modules == []


# A whole session through the prelude -----------------------------------------------------------


@asynccontextmanager
async def session(data: Seed, log: Path, *serve_args: str, **options: Any) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=KBES,
        args=["serve", "--db", str(data.db), "--log-level", "debug", *serve_args],
        env=dict(os.environ),
    )
    with open(log, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", **options) as client:
            yield client


def prelude_log(log: Path) -> list[str]:
    return [
        line.split("kbes.prelude: ", 1)[1]
        for line in log.read_text().splitlines()
        if "kbes.prelude: " in line
    ]


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:ping is removed")  # a legacy session may still ping
async def test_a_whole_session_through_the_prelude(data: Seed, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    args = ("--grant", data.kb, "--edits", "allow", "--history-tools")
    async with session(data, log, *args) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [*TOOLS, *(t.name for t in HISTORY_TOOLS)]
        await client.send_ping()
        # Everything so far came from the prelude; the first call hands over.
        assert prelude_log(log) == [
            "stdio prelude: answered initialize",
            "stdio prelude: answered tools/list",
            "stdio prelude: answered ping",
        ]
        kb = data.kb
        hits = body(
            await client.call_tool(
                "search_knowledge_base", {"knowledge_base_id": kb, "query": "reset password"}
            )
        )
        assert [h["article_id"] for h in hits["hits"]] == [data.password]
        read = body(
            await client.call_tool(
                "read_knowledge_article", {"knowledge_base_id": kb, "article_id": data.password}
            )
        )
        edit = {
            "knowledge_base_id": kb,
            "article_id": data.password,
            "content": "Open Settings > Security > Reset password.",
            "expected_version": read["updated_at"],
            "idempotency_key": "prelude-session",
        }
        edited = body(await client.call_tool("edit_knowledge_article", edit))
        assert edited["replay"] is False
        stale = error(
            await client.call_tool("edit_knowledge_article", {**edit, "idempotency_key": "again"})
        )
        assert stale["code"] == "version_conflict"
        events = body(
            await client.call_tool(
                "poll_resource_events", {"resource_type": "knowledge_base", "resource_id": kb}
            )
        )
        assert events["events"][-1]["type"] == "saved"
        diff = body(
            await client.call_tool(
                "diff_knowledge_article",
                {
                    "knowledge_base_id": kb,
                    "article_id": data.password,
                    "since_version": read["updated_at"],
                },
            )
        )
        assert diff["changed"] is True
        bad = error(
            await client.call_tool("search_knowledge_base", {"knowledge_base_id": kb, "query": "r"})
        )
        assert bad["code"] == "invalid_argument"
        hidden = error(
            await client.call_tool(
                "read_knowledge_article",
                {"knowledge_base_id": data.other_kb, "article_id": data.other_article},
            )
        )
        assert hidden["code"] == "not_found"
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        assert unknown.value.error.code == -32602
        assert len((await client.list_tools()).tools) == len(TOOLS) + len(HISTORY_TOOLS)
    lines = prelude_log(log)
    assert lines[3].startswith('stdio prelude: handing over to the MCP SDK at b\'{"jsonrpc":"2.0"')
    assert "tools/call" in lines[3] and "replaying 4 message(s)" in lines[3]
    assert "differently" not in log.read_text()


@pytest.mark.anyio
async def test_elicitation_works_after_the_handover(data: Seed, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    user = Elicitations("accept")
    async with session(data, log, "--grant", data.kb, elicitation_callback=user) as client:
        await client.list_tools()
        read = body(
            await client.call_tool(
                "read_knowledge_article", {"knowledge_base_id": data.kb, "article_id": data.billing}
            )
        )
        before = article_events(data.db, data.billing)
        edited = body(
            await client.call_tool(
                "edit_knowledge_article",
                {
                    "knowledge_base_id": data.kb,
                    "article_id": data.billing,
                    "content": "Invoices go out on the first working day.",
                    "expected_version": read["updated_at"],
                    "idempotency_key": "prelude-elicit",
                },
            )
        )
        assert edited["replay"] is False
        assert len(user.messages) == 1 and "edit_knowledge_article" in user.messages[0]
        assert article_events(data.db, data.billing) == [*before, "Saved"]
    assert any("handing over" in line for line in prelude_log(log))


@pytest.mark.anyio
async def test_the_modern_era_goes_straight_to_the_sdk(data: Seed, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    params = StdioServerParameters(
        command=KBES,
        args=["serve", "--db", str(data.db), "--log-level", "debug", "--grant", data.kb],
        env=dict(os.environ),
    )
    with open(log, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto") as client:
            assert len((await client.list_tools()).tools) == len(TOOLS)
    (line,) = prelude_log(log)
    assert "server/discover" in line and "replaying 0 message(s)" in line


# What the prelude answers, and what it leaves to the SDK (in process, over pipes) -----------------


@pytest.fixture
def wire() -> Iterator[tuple[int, int, Prelude]]:
    """(client's write end, client's read end, a prelude on the other ends of two pipes)."""
    server_reads, client_writes = os.pipe()
    client_reads, server_writes = os.pipe()
    yield client_writes, client_reads, Prelude(server_reads, server_writes, [])
    for fd in (server_reads, client_writes, client_reads, server_writes):
        with contextlib.suppress(OSError):
            os.close(fd)


def run_prelude(
    wire: tuple[int, int, Prelude], lines: list[bytes]
) -> tuple[Handover | None, list[dict[str, Any]]]:
    """Send `lines` and close; what the prelude hands over, and what it answered itself."""
    client_writes, client_reads, prelude = wire
    os.write(client_writes, b"".join(lines))
    os.close(client_writes)
    handover = prelude.run(Answers(TOOLS.values(), "instructions"))
    os.set_blocking(client_reads, False)
    try:
        sent = os.read(client_reads, 1 << 20)
    except BlockingIOError:
        sent = b""
    return handover, [json.loads(line) for line in sent.splitlines()]


def init(version: str = "2025-06-18", **params: Any) -> bytes:
    base = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**base, **params}}
    return json.dumps(message).encode() + b"\n"


TOOLS_CALL = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"}}\n'


@pytest.mark.parametrize(
    "first",
    [
        init(MODERN_PROTOCOL_VERSIONS[-1]),
        init("2099-01-01"),
        init(_meta={"progressToken": 1}),
        init(capabilities={"roots": {"listChanged": "yes"}}),
        init(capabilities={"sampling": 1}),
        init(clientInfo={"name": "c"}),
        init(clientInfo={"name": "c", "version": "1", "icons": []}),
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"\\ud800","version":"1"}}}\n',
        b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":1.5,"method":"initialize"}\n',
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n',
        b"\n",
        b"not json\n",
        init().replace(b', "id"', b',\r"id"'),  # a lone CR: the SDK's universal newlines split it
    ],
)
def test_what_the_prelude_is_unsure_of_goes_to_the_sdk_untouched(
    wire: tuple[int, int, Prelude], first: bytes
) -> None:
    handover, sent = run_prelude(wire, [first, TOOLS_CALL])
    assert sent == []
    assert handover is not None
    assert handover.lead == first + TOOLS_CALL
    assert handover.expected == {}


def test_the_prelude_replays_what_it_answered_under_private_ids(
    wire: tuple[int, int, Prelude],
) -> None:
    lines = [
        init("2025-03-26", capabilities={"elicitation": {"form": {}}, "experimental": {"x": {}}}),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n',
        b'{"jsonrpc":"2.0","id":"two","method":"tools/list","params":{}}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"x"}}\n',
        TOOLS_CALL,
    ]
    handover, sent = run_prelude(wire, lines)
    assert [m["id"] for m in sent] == [1, "two", 3]
    assert sent[0]["result"]["protocolVersion"] == "2025-03-26"
    assert sent[2]["result"] == {}
    assert handover is not None
    replayed = [json.loads(line) for line in handover.lead.splitlines()]
    assert [m.get("method") for m in replayed] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "ping",
        "tools/list",  # with a cursor: the SDK's to answer, under the client's id
        "tools/call",
    ]
    private = [m["id"] for m in replayed[:4] if "id" in m]
    assert all(p.startswith("kbes-prelude-") for p in private) and len(set(private)) == 3
    assert replayed[4]["id"] == 4 and replayed[5]["id"] == 9
    assert replayed[0]["params"] == json.loads(lines[0])["params"]
    assert sorted(handover.expected) == sorted(private)


def test_a_client_that_leaves_during_the_prelude_needs_no_sdk(
    wire: tuple[int, int, Prelude],
) -> None:
    handover, sent = run_prelude(wire, [init()])
    assert handover is None and [m["id"] for m in sent] == [1]


def test_the_sdks_answers_to_replayed_requests_are_checked_and_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Out:
        def __init__(self) -> None:
            self.text = ""

        async def write(self, text: str) -> None:
            self.text += text

        async def flush(self) -> None:
            pass

    private = "kbes-prelude-abc-1"
    same = response(private, b'{"tools":[]}').decode()
    other = response("kbes-prelude-abc-2", b'{"tools":[]}').decode()
    out = Out()
    expected = {private: same.encode(), "kbes-prelude-abc-2": response("x", b"{}")}
    stdout = _Suppress(out, expected)

    async def main() -> None:
        await stdout.write(same)
        await stdout.write(other)
        await stdout.write('{"jsonrpc":"2.0","id":5,"result":{}}\n')
        await stdout.write(same)  # a second answer under a private id is not the prelude's

    with caplog.at_level(logging.WARNING, logger="kbes.prelude"):
        anyio.run(main)
    assert out.text == '{"jsonrpc":"2.0","id":5,"result":{}}\n' + same
    assert len(caplog.records) == 1 and "differently" in caplog.records[0].getMessage()


def test_protocol_versions_are_the_sdks() -> None:
    versions = protocol_versions()
    assert versions == ProtocolVersions(
        tuple(HANDSHAKE_PROTOCOL_VERSIONS), tuple(MODERN_PROTOCOL_VERSIONS)
    )
