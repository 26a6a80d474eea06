"""Several `kbes serve --http` behind one address: with `--approval-keys`, the approval a
2026-07-28 client gives may reach a different server process than the one that asked (a load
balancer, a restart); the same sealed state is refused, writing nothing, by a server that does
not share the keys. Real server processes, the SDK's real client."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from mcp_harness import (
    Elicitations,
    HttpServer,
    Seed,
    article_events,
    body,
    current_version,
    event_count,
    http_client,
    http_server,
    run_kbes,
    seed,
    stdio_client,
)

from kbes.server.mcp_server import APPROVAL_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("shared-approval") / "kbes.sqlite")


def keys_file(path: Path, *keys: str) -> str:
    path.write_text("# kbes serve --approval-keys: the first seals, all unseal\n" + "\n".join(keys))
    return str(path)


@pytest.fixture(scope="module")
def servers(data: Seed) -> Iterator[dict[str, HttpServer]]:
    """`asker` and `peer` share one key; `rotated` lists a new key first and the old one after
    it (mid-rotation); `stranger` has a key of its own."""
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    folder = data.db.parent
    files = {
        "asker": keys_file(folder / "keys-asker.txt", old),
        "peer": keys_file(folder / "keys-peer.txt", old),
        "rotated": keys_file(folder / "keys-rotated.txt", new, old),
    }
    ask = ("--grant", data.kb, "--edits", "ask")
    with (
        http_server(data.db, *ask, "--approval-keys", files["asker"]) as asker,
        http_server(data.db, *ask, "--approval-keys", files["peer"]) as peer,
        http_server(data.db, *ask, "--approval-keys", files["rotated"]) as rotated,
        http_server(data.db, *ask) as stranger,
    ):
        yield {"asker": asker, "peer": peer, "rotated": rotated, "stranger": stranger}


def edit_arguments(data: Seed, key: str) -> dict[str, Any]:
    return {
        "knowledge_base_id": data.kb,
        "article_id": data.billing,
        "content": f"Approved on one server, written by another ({key}).",
        "expected_version": current_version(data.db, data.kb, data.billing),
        "idempotency_key": key,
    }


async def ask(
    server: HttpServer, arguments: dict[str, Any], token: str | None = None
) -> types.InputRequiredResult:
    """The first round of the edit on `server`: the approval question and its sealed state."""
    # A client that can ask its user (elicitation), else the server answers approval_required.
    user = Elicitations()
    async with http_client(server.url, token, mode="auto", elicitation_callback=user) as client:
        asked = await client.session.call_tool(
            "edit_knowledge_article", arguments, allow_input_required=True
        )
    assert isinstance(asked, types.InputRequiredResult), asked
    assert set(asked.input_requests or {}) == {APPROVAL_KEY}
    assert asked.request_state
    return asked


async def answer(
    server: HttpServer,
    arguments: dict[str, Any],
    asked: types.InputRequiredResult,
    token: str | None = None,
) -> types.CallToolResult:
    """The user's acceptance, sent with the sealed state to `server`."""
    accepted = types.ElicitResult(action="accept", content={})
    user = Elicitations("decline")  # asked again, the user would say no: it must not be asked
    async with http_client(server.url, token, mode="auto", elicitation_callback=user) as client:
        result = await client.call_tool(
            "edit_knowledge_article",
            arguments,
            input_responses={APPROVAL_KEY: accepted},
            request_state=asked.request_state,
        )
    assert user.messages == []
    return result


def leaves(group: BaseExceptionGroup[Any]) -> Iterator[Any]:
    for e in group.exceptions:
        yield from leaves(e) if isinstance(e, BaseExceptionGroup) else [e]


async def refusal(
    server: HttpServer,
    arguments: dict[str, Any],
    asked: types.InputRequiredResult,
    token: str | None = None,
) -> MCPError:
    """The protocol error `server` answers the acceptance with (the SDK client raises it inside
    its task group, so it arrives in an exception group)."""
    refused: list[MCPError] = []
    try:
        await answer(server, arguments, asked, token)
    except* MCPError as group:
        refused = list(leaves(group))
    assert len(refused) == 1, "the server wrote an edit it should have refused"
    return refused[0]


@pytest.mark.parametrize("answered_by", ["peer", "rotated"])
async def test_an_approval_asked_by_one_server_is_accepted_by_another_sharing_the_key(
    data: Seed, servers: dict[str, HttpServer], answered_by: str
) -> None:
    arguments = edit_arguments(data, f"shared-{answered_by}")
    before = article_events(data.db, data.billing)
    asked = await ask(servers["asker"], arguments)
    assert article_events(data.db, data.billing) == before  # asking writes nothing
    edited = body(await answer(servers[answered_by], arguments, asked))
    assert edited["replay"] is False
    assert article_events(data.db, data.billing) == [*before, "Saved"]


async def test_a_server_without_the_key_refuses_the_approval_and_writes_nothing(
    data: Seed, servers: dict[str, HttpServer]
) -> None:
    arguments = edit_arguments(data, "stranger")
    asked = await ask(servers["asker"], arguments)
    before = event_count(data.db)
    refused = await refusal(servers["stranger"], arguments, asked)
    assert refused.code == types.INVALID_PARAMS
    assert "Invalid or expired requestState" in str(refused)
    # Nor does the sealed approval stretch to a different edit on a server that has the key.
    changed = {**arguments, "content": "Something the user never saw."}
    assert (await refusal(servers["peer"], changed, asked)).code == types.INVALID_PARAMS
    assert event_count(data.db) == before


ALICE, BOB = secrets.token_urlsafe(24), secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def token_servers(data: Seed) -> Iterator[tuple[HttpServer, HttpServer]]:
    """Two servers sharing the approval key and the tokens file."""
    folder = data.db.parent
    tokens = folder / "tokens.txt"
    tokens.write_text(f"alice {ALICE} *\nbob {BOB} *\n")
    serve = ("--grant", data.kb, "--edits", "ask", "--tokens", str(tokens))
    keys = keys_file(folder / "keys-tokens.txt", secrets.token_hex(32))
    with (
        http_server(data.db, *serve, "--approval-keys", keys) as first,
        http_server(data.db, *serve, "--approval-keys", keys) as second,
    ):
        yield first, second


async def test_with_tokens_an_approval_is_the_token_holders_alone(
    data: Seed, token_servers: tuple[HttpServer, HttpServer]
) -> None:
    first, second = token_servers
    arguments = edit_arguments(data, "alice-on-two-servers")
    asked = await ask(first, arguments, ALICE)
    before = event_count(data.db)
    # Bob cannot spend Alice's approval, even on a server that shares the key.
    assert (await refusal(second, arguments, asked, BOB)).code == types.INVALID_PARAMS
    assert event_count(data.db) == before
    edited = body(await answer(second, arguments, asked, ALICE))
    assert edited["replay"] is False
    assert event_count(data.db) == before + 2  # the Saved event and its receipt


async def test_approval_keys_from_the_environment_are_ignored_over_stdio(
    data: Seed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KBES_APPROVAL_KEYS exported for a shell's HTTP servers does not stop a stdio server."""
    monkeypatch.setenv("KBES_APPROVAL_KEYS", keys_file(tmp_path / "k.txt", secrets.token_hex(32)))
    async with stdio_client(data.db, "--grant", data.kb) as client:
        listed = await client.list_tools()
    assert "edit_knowledge_article" in {tool.name for tool in listed.tools}


@pytest.mark.parametrize(
    ("lines", "args", "words"),
    [
        (["too-short"], ["--http", "0"], "key 1 of"),
        (["# only a comment"], ["--http", "0"], "holds no key"),
        (["a" * 32, "a" * 32], ["--http", "0"], "lists a key twice"),
        (["b" * 32], [], "--approval-keys applies to --http"),
    ],
)
def test_bad_approval_keys_are_refused_naming_the_flag(
    data: Seed, tmp_path: Path, lines: list[str], args: list[str], words: str
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join(lines) + "\n")
    result = run_kbes(
        "serve", "--db", str(data.db), "--grant-all", "--approval-keys", str(keys), *args
    )
    assert result.returncode == 2, result.stderr
    assert words in result.stderr
    if "--http" in args:
        assert "Invalid value for --approval-keys" in result.stderr
    assert "Traceback" not in result.stderr
