"""The prompts, with the official client against real `kbes serve` processes over stdio and HTTP,
in both protocol eras: they list, they get (their text exactly what `kbes.tools.prompts` words
for the arguments given and the tools served), their knowledge-base argument completes to the
knowledge bases the caller may see (over stdio the server's grants, over HTTP the bearer
token's), and they refuse what a tool call would."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import Seed, http_client, http_server, seed, stdio_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbes import open_store
from kbes.server.resources import ARTICLE_TEMPLATE
from kbes.tools import HISTORY_TOOLS, TOOLS
from kbes.tools.prompts import PROMPTS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-" + "a1" * 16  # granted the Support knowledge base only
MODES = ("legacy", "auto")


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


@asynccontextmanager
async def connect(
    transport: str, data: Seed, *serve: str, modes: tuple[str, ...] = ("auto",)
) -> AsyncIterator[dict[str, Client]]:
    """A client per mode that may see `data.kb` ("Support") and not `data.other_kb`
    ("Internal"): over stdio of a server granted only `kb`; over HTTP with Alice's token, of one
    server granted all."""
    async with AsyncExitStack() as stack:
        if transport == "stdio":
            connect = functools.partial(stdio_client, data.db, "--grant", data.kb, *serve)
        else:
            tokens = data.db.with_name("tokens.txt")
            digest = hashlib.sha256(ALICE.encode()).hexdigest()
            tokens.write_text(f"alice sha256:{digest} {data.kb}\n")
            tokens.chmod(0o600)
            grants = ("--grant-all", "--tokens", str(tokens))
            server = stack.enter_context(http_server(data.db, *grants, *serve))
            connect = functools.partial(http_client, server.url, ALICE)
        yield {mode: await stack.enter_async_context(connect(mode=mode)) for mode in modes}


def expected_text(data: Seed, name: str, arguments: dict[str, str], tools: Any = TOOLS) -> str:
    store = open_store(data.db)
    try:
        return PROMPTS[name].text(store, arguments, None, tools)
    finally:
        store.close()


async def completions(client: Client, ref: Any, argument: str, typed: str) -> list[str]:
    result = await client.complete(ref, {"name": argument, "value": typed})
    assert result.completion.total == len(result.completion.values)
    return result.completion.values


def prompt(name: str) -> types.PromptReference:
    return types.PromptReference(type="ref/prompt", name=name)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_prompts_list_get_complete_and_refuse(data: Seed, transport: str) -> None:
    """Over HTTP the server also serves the diff tool, which a recheck then uses."""
    tools = [*TOOLS, *(t.name for t in HISTORY_TOOLS)] if transport == "http" else list(TOOLS)
    serve = ("--history-tools",) if transport == "http" else ()
    async with connect(transport, data, *serve, modes=MODES) as clients:
        eras = {mode: c.protocol_version in MODERN_PROTOCOL_VERSIONS for mode, c in clients.items()}
        assert eras == {"legacy": False, "auto": True}
        for client in clients.values():
            await lists_gets_and_completes(client, data, tools)
        await refuses_what_a_tool_would(clients["auto"], data)


async def lists_gets_and_completes(client: Client, data: Seed, tools: list[str]) -> None:
    """One client's view: the two prompts, their texts, and completions under its grants."""
    capabilities = client.server_capabilities
    assert capabilities is not None and capabilities.completions is not None
    assert capabilities.prompts == types.PromptsCapability(list_changed=False)

    listed = (await client.list_prompts()).prompts
    assert [p.name for p in listed] == ["cite_answer", "recheck_citations"]
    assert {p.name: [(a.name, a.required) for a in p.arguments or []] for p in listed} == {
        "cite_answer": [("knowledge_base_id", True), ("question", True)],
        "recheck_citations": [
            ("knowledge_base_id", True),
            ("cursor", False),
            ("citations", False),
        ],
    }

    question = {"knowledge_base_id": data.kb, "question": "How do I reset my password?"}
    got = await client.get_prompt("cite_answer", question)
    [message] = got.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    assert message.content.text == expected_text(data, "cite_answer", question)
    assert data.kb in message.content.text and "How do I reset my password?" in (
        message.content.text
    )

    recheck = {"knowledge_base_id": data.kb, "cursor": "7"}
    got = await client.get_prompt("recheck_citations", recheck)
    content = got.messages[0].content
    assert isinstance(content, types.TextContent)
    text = content.text
    assert text == expected_text(data, "recheck_citations", recheck, tools)
    assert "after_sequence 7" in text and "the ones given earlier" in text
    assert ("diff_knowledge_article" in text) == ("diff_knowledge_article" in tools)

    # Completion: the granted knowledge base by its name or id, never the other one.
    for ref in (prompt("cite_answer"), prompt("recheck_citations")):
        assert await completions(client, ref, "knowledge_base_id", "sup") == [data.kb]
        assert await completions(client, ref, "knowledge_base_id", data.kb[:4]) == [data.kb]
        assert await completions(client, ref, "knowledge_base_id", "") == [data.kb]
        assert await completions(client, ref, "knowledge_base_id", "Internal") == []
        assert await completions(client, ref, "knowledge_base_id", data.other_kb) == []
    template = types.ResourceTemplateReference(type="ref/resource", uri=ARTICLE_TEMPLATE)
    assert await completions(client, template, "knowledge_base_id", "S") == [data.kb]
    assert await completions(client, template, "article_id", "") == []
    assert await completions(client, prompt("cite_answer"), "question", "How") == []
    assert await completions(client, prompt("no_such_prompt"), "knowledge_base_id", "") == []


async def refuses_what_a_tool_would(client: Client, data: Seed) -> None:
    """Refusals are protocol errors carrying the tools' error JSON; an ungranted knowledge base
    reads exactly as one that does not exist."""
    refused = {}
    for label, name, arguments in [
        ("unknown prompt", "no_such_prompt", {}),
        ("ungranted", "cite_answer", {"knowledge_base_id": data.other_kb, "question": "x"}),
        ("missing", "cite_answer", {"knowledge_base_id": data.kb}),
        ("bad cursor", "recheck_citations", {"knowledge_base_id": data.kb, "cursor": "-1"}),
        ("extra", "recheck_citations", {"knowledge_base_id": data.kb, "since": "1"}),
    ]:
        with pytest.raises(MCPError) as error:
            await client.get_prompt(name, arguments)
        assert error.value.code == types.INVALID_PARAMS, label
        refused[label] = error.value
    assert refused["unknown prompt"].message == (
        "Unknown prompt: no_such_prompt; this server has cite_answer, recheck_citations"
    )
    ungranted = refused["ungranted"].data
    assert ungranted["code"] == "not_found" and data.other_kb in ungranted["message"]
    assert {k: refused[k].data.get("field") for k in ("missing", "bad cursor", "extra")} == {
        "missing": "question",
        "bad cursor": "cursor",
        "extra": "since",
    }
