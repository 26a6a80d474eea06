"""An open stream follows its token: after `kbes token remove` (or any edit of the tokens file
that drops the token) a real `kbes serve --http --tokens` rings it no more and ends its listen
stream, and a token narrowed to one knowledge base no longer hears another (issue 35, defect
8). Before, grants were read once, when the stream opened. Absence is proven against a control
listener that hears the same change, never by sleeping."""

from __future__ import annotations

import hashlib
import subprocess
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated
from mcp_harness import KBES, Seed, http_client, http_server, seed

from kbes.server.resources import article_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-" + "a1" * 16  # both knowledge bases, then narrowed to Support
BOB = "bob-" + "b2" * 16  # every knowledge base throughout: the control
CAROL = "carol-" + "c3" * 16  # every knowledge base, then removed


def line(name: str, token: str, grants: str) -> str:
    return f"{name} sha256:{hashlib.sha256(token.encode()).hexdigest()} {grants}\n"


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


@pytest.fixture
def tokens(data: Seed, tmp_path: Path) -> Path:
    path = tmp_path / "tokens.txt"
    both = f"{data.kb},{data.other_kb}"
    path.write_text(line("alice", ALICE, both) + line("bob", BOB, "*") + line("carol", CAROL, "*"))
    path.chmod(0o600)
    return path


def narrow_and_revoke(data: Seed, tokens: Path) -> None:
    """Alice narrowed to Support by an edit of the file, Carol removed by `kbes token remove`."""
    text = tokens.read_text().replace(f"{data.kb},{data.other_kb}", data.kb)
    tokens.write_text(text)
    done = subprocess.run(
        [KBES, "token", "remove", "carol", "--tokens", str(tokens)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def save(data: Seed, kb: str, article: str, content: str) -> None:
    done = subprocess.run(
        [KBES, "article", "save", article, "--kb", kb, "--content", content, "--db", str(data.db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


async def until(condition: Any, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)


async def test_listen_streams_follow_their_tokens(data: Seed, tokens: Path) -> None:
    password = article_uri(data.kb, data.password)
    other = article_uri(data.other_kb, data.other_article)
    heard: dict[str, list[str]] = {"alice": [], "bob": [], "carol": []}
    ended: set[str] = set()
    ready: set[str] = set()
    with http_server(data.db, "--grant-all", "--tokens", str(tokens)) as server:

        async def listen(name: str, token: str) -> None:
            async with (
                http_client(server.url, token) as client,
                client.listen(resource_subscriptions=[password, other]) as stream,
            ):
                ready.add(name)
                async for event in stream:
                    assert isinstance(event, ResourceUpdated)
                    heard[name].append(event.uri)
            ended.add(name)

        async with anyio.create_task_group() as tasks:
            for name, token in (("alice", ALICE), ("bob", BOB), ("carol", CAROL)):
                tasks.start_soon(listen, name, token)
            await until(lambda: len(ready) == 3)
            await anyio.to_thread.run_sync(narrow_and_revoke, data, tokens)
            await anyio.to_thread.run_sync(save, data, data.other_kb, data.other_article, "Weekly.")
            await until(lambda: other in heard["bob"])
            await anyio.to_thread.run_sync(save, data, data.kb, data.password, "From Account.")
            await until(lambda: password in heard["bob"] and password in heard["alice"])
            await until(lambda: "carol" in ended)
            tasks.cancel_scope.cancel()
    assert heard["alice"] == [password]  # rung in that order: `other` would have come first
    assert heard["carol"] == []


async def test_handshake_era_subscriptions_follow_their_tokens(data: Seed, tokens: Path) -> None:
    password = article_uri(data.kb, data.password)
    other = article_uri(data.other_kb, data.other_article)
    heard: dict[str, list[str]] = {"alice": [], "bob": [], "carol": []}

    def hearing(name: str) -> Any:
        async def messages(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                heard[name].append(message.params.uri)

        return messages

    with http_server(data.db, "--grant-all", "--tokens", str(tokens)) as server:
        async with (
            http_client(server.url, ALICE, mode="legacy", message_handler=hearing("alice")) as a,
            http_client(server.url, BOB, mode="legacy", message_handler=hearing("bob")) as b,
            http_client(server.url, CAROL, mode="legacy", message_handler=hearing("carol")) as c,
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                for client in (a, b, c):
                    for uri in (other, password):
                        await client.subscribe_resource(uri)
            await anyio.to_thread.run_sync(narrow_and_revoke, data, tokens)
            await anyio.to_thread.run_sync(save, data, data.other_kb, data.other_article, "Weekly.")
            await until(lambda: other in heard["bob"])
            await anyio.to_thread.run_sync(save, data, data.kb, data.password, "From Account.")
            await until(lambda: password in heard["bob"] and password in heard["alice"])
            # Carol's session is past its token: her next ring would follow Bob's (same tail).
            await anyio.to_thread.run_sync(save, data, data.kb, data.password, "From Settings.")
            await until(lambda: heard["bob"].count(password) == 2)
            await until(lambda: heard["alice"].count(password) == 2)
    assert heard["alice"] == [password, password]
    assert heard["carol"] == []
