"""What the MCP tests share: a seeded database, a real `kbes serve` subprocess (stdio or HTTP)
and the SDK's real client pointed at it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kbes import open_store


def kbes_executable() -> str:
    """The `kbes` console script of the interpreter running the tests."""
    beside = Path(sys.executable).with_name("kbes")
    if beside.exists():
        return str(beside)
    found = shutil.which("kbes")
    assert found, "the kbes console script is not installed (pip install -e .)"
    return found


KBES = kbes_executable()


DB = TypeVar("DB", Path, str)
"""A SQLite file, or a PostgreSQL URL."""


@dataclass(frozen=True)
class Seed(Generic[DB]):
    """A database with two knowledge bases; tests grant `kb` and not `other_kb`."""

    db: DB
    kb: str
    other_kb: str
    password: str
    """Published article in `kb` about resetting a password."""
    billing: str
    """Published article in `kb` about billing."""
    other_article: str
    """Published article in `other_kb` that also mentions passwords."""
    draft: str
    """A draft in `kb` whose content has a unique word (zanzibarite)."""


def seed(db: DB) -> Seed[DB]:
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Support"))
        other_kb = str(store.create_knowledge_base("Internal"))
        password = store.add_article(
            kb,
            "Reset your password",
            "To reset your password, open Settings, choose Security and press Reset password.",
            publish=True,
        )
        billing = store.add_article(
            kb, "Billing cycle", "Invoices are sent on the first day of each month.", publish=True
        )
        other = store.add_article(
            other_kb, "Admin password rotation", "Rotate the admin password monthly.", publish=True
        )
        draft = store.add_article(kb, "Unreleased", "The zanzibarite feature ships next week.")
    finally:
        store.close()
    return Seed(db, kb, other_kb, str(password), str(billing), str(other), str(draft))


def event_count(db: Path) -> int:
    """How many events the log holds: 'writes nothing' means this does not move."""
    store = open_store(db)
    try:
        return store.head()
    finally:
        store.close()


def article_events(db: Path, article_id: str) -> list[str]:
    """Class names of every stored event of one article, oldest first."""
    store = open_store(db)
    try:
        from uuid import UUID

        return [type(e).__name__ for e in store.log.events.get(UUID(article_id))]
    finally:
        store.close()


def run_kbes(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a `kbes` command in its own process, as a person at a shell would."""
    return subprocess.run([KBES, *args], capture_output=True, text=True, timeout=60)


def stdio_client(db: Path, *serve_args: str, **client_options: Any) -> Client:
    """The SDK client over stdio against `kbes serve --db DB SERVE_ARGS...`."""
    params = StdioServerParameters(
        command=KBES, args=["serve", "--db", str(db), *serve_args], env=dict(os.environ)
    )
    return Client(params, **client_options)


def http_client(url: str, token: str | None = None, **client_options: Any) -> Client:
    """The SDK client over streamable HTTP, with a bearer token if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, **client_options)


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def http_server(
    db: Path | str,
    *serve_args: str,
    log_path: Path | None = None,
    command: Sequence[str] = (KBES,),
    env: dict[str, str] | None = None,
    host: str = "127.0.0.1",
) -> Iterator[HttpServer]:
    """`kbes serve --http 127.0.0.1:0` in a subprocess; the URL is read back from its stderr
    (port 0 lets the OS pick a free port, so tests never collide); `log_path` is required for
    a PostgreSQL URL. `command` runs kbes another way (a test-only wrapper), `host` serves
    another loopback address."""
    if log_path is None:
        assert isinstance(db, Path)
        log_path = db.with_name(db.name + f".serve-{time.monotonic_ns()}.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "serve", "--db", str(db), "--http", f"{host}:0", *serve_args],
            stdin=subprocess.DEVNULL,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        url = None
        while url is None:
            match = re.search(
                rf"http://{re.escape(host)}:\d+/mcp", log_path.read_text(errors="replace")
            )
            if match:
                url = match.group(0)
            elif process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"kbes serve did not start:\n{log_path.read_text()}")
            else:
                time.sleep(0.05)
        _wait_listening(url, process, log_path)
        yield HttpServer(url, process, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_listening(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    import socket

    host, port_text = url.split("//", 1)[1].split("/")[0].rsplit(":", 1)
    port = int(port_text)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"kbes serve is not listening:\n{log_path.read_text()}"
                ) from None
            time.sleep(0.05)


def body(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON a model reads. A success carries the same JSON as structuredContent; any item
    after the text is a resource link to a cited version (issue 14)."""
    assert result.content and result.content[0].type == "text"
    assert all(item.type == "resource_link" for item in result.content[1:])
    data = json.loads(result.content[0].text)
    if not result.is_error:
        assert result.structured_content == data
    return data


def text(result: types.CallToolResult) -> str:
    """The text item a tool's answer starts with, refusals included: its JSON."""
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


def text_contents(result: types.ReadResourceResult) -> types.TextResourceContents:
    """The one item of a resource read: kbes serves articles as text."""
    item = result.contents[0]
    assert isinstance(item, types.TextResourceContents)
    return item


def error(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON of a tool error (isError true)."""
    assert result.is_error, f"expected a tool error, got {result.content}"
    return body(result)


class Elicitations:
    """An elicitation callback that answers with `action` and remembers what it was asked."""

    def __init__(self, action: Literal["accept", "decline", "cancel"] = "accept") -> None:
        self.action = action
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.messages.append(params.message)
        content: dict[str, Any] | None = {} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


def current_version(db: Path, knowledge_base_id: str, article_id: str) -> str:
    """The article's updated_at, read directly from the store (no grants)."""
    from kbes.tools import TOOLS
    from kbes.tools.wire import ArticleResult, ReadRequest

    store = open_store(db)
    try:
        request = ReadRequest(knowledge_base_id=knowledge_base_id, article_id=article_id)
        read = TOOLS["read_knowledge_article"].run(store, request, None)
        assert isinstance(read, ArticleResult)
        return read.updated_at
    finally:
        store.close()


def probe_calls(
    kb: str, article: str, version: str, content: str, key: str
) -> list[tuple[str, dict[str, Any]]]:
    """One call of each tool at `kb` / `article` (the edit with `version`, `content`, `key`):
    what a client probes a knowledge base it should not reach with."""
    return [
        ("search_knowledge_base", {"knowledge_base_id": kb, "query": "password"}),
        ("read_knowledge_article", {"knowledge_base_id": kb, "article_id": article}),
        (
            "edit_knowledge_article",
            {
                "knowledge_base_id": kb,
                "article_id": article,
                "content": content,
                "expected_version": version,
                "idempotency_key": key,
            },
        ),
        ("poll_resource_events", {"resource_type": "knowledge_base", "resource_id": kb}),
    ]
