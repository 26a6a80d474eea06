"""Articles as MCP resources, with the official client against real `kbes serve` processes:
the templates, a citation's resource link reading back its version for good, the tools' refusals
(drafts, other and ungranted knowledge bases read exactly as an unknown id), and push: a save in
another process rings a listener on the article's current URI within a second, and rings nobody
who listens to a draft or to a knowledge base they may not see. SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_harness import KBES, Seed, body, http_client, http_server, seed, text_contents
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbes import open_store
from kbes.server.resources import (
    ARTICLE_TEMPLATE,
    VERSION_TEMPLATE,
    article_uri,
    knowledge_base_uri,
)
from kbes.server.resources import version_uri as pinned_uri
from kbes.tools.wire import Citation

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = "alice-" + "a1" * 16  # granted the Support knowledge base only
BOB = "bob-" + "b2" * 16  # every knowledge base


@pytest.fixture
def data(tmp_path: Path) -> Seed:
    return seed(tmp_path / "kbes.sqlite")


def tokens_file(data: Seed, workdir: Path) -> Path:
    path = workdir / "tokens.txt"
    path.write_text(
        f"alice {ALICE} {data.kb}\nbob sha256:{hashlib.sha256(BOB.encode()).hexdigest()} *\n"
    )
    path.chmod(0o600)
    return path


@asynccontextmanager
async def connect(
    transport: str,
    db: str,
    data: Seed,
    workdir: Path,
    env: dict[str, str] | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """A client that may see `data.kb` and not `data.other_kb`: over stdio, a server granted
    only `kb`; over HTTP, Alice's token on a server granted everything."""
    environment = {**os.environ, **(env or {})}
    if transport == "stdio":
        params = StdioServerParameters(
            command=KBES, args=["serve", "--db", db, "--grant", data.kb], env=environment
        )
        async with Client(params, **options) as client:
            yield client
        return
    serve = ("--grant-all", "--tokens", str(tokens_file(data, workdir)))
    saved = dict(os.environ)
    os.environ.update(env or {})  # the server process inherits it
    try:
        log = workdir / f"serve-{time.monotonic_ns()}.log"
        with http_server(db, *serve, log_path=log) as server:
            async with http_client(server.url, ALICE, **options) as client:
                yield client
    finally:
        os.environ.clear()
        os.environ.update(saved)


def save(db: str, kb: str, article: str, content: str, env: dict[str, str] | None = None) -> None:
    """`kbes article save` in a process of its own, as a person in another terminal."""
    done = subprocess.run(
        [KBES, "article", "save", article, "--kb", kb, "--content", content, "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr


def draft_version(db: str, article: str) -> str:
    store = open_store(db)
    try:
        from kbes.domain.clock import format_timestamp

        return format_timestamp(store.get_article(article).updated_at)
    finally:
        store.close()


async def refusal(client: Client, uri: str) -> dict[str, Any]:
    with pytest.raises(MCPError) as refused:
        await client.read_resource(uri)
    error = refused.value
    return {"rpc": error.code, "message": error.message, "data": error.data}


def masked(answer: dict[str, Any], *ids: str) -> str:
    text = json.dumps(answer, sort_keys=True)
    for i, value in enumerate(ids):
        text = text.replace(value, f"<id{i}>")
    return text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_citation_links_to_its_version_for_good(
    data: Seed, transport: str, tmp_path: Path
) -> None:
    db = str(data.db)
    async with connect(transport, db, data, tmp_path) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.mime_type) for t in templates] == [
            (ARTICLE_TEMPLATE, "text/markdown"),
            (VERSION_TEMPLATE, "text/markdown"),
        ]
        assert all(t.name and t.description for t in templates)
        assert [r.uri for r in (await client.list_resources()).resources] == [
            knowledge_base_uri(data.kb)
        ]

        found = await client.call_tool(
            "search_knowledge_base", {"knowledge_base_id": data.kb, "query": "password"}
        )
        hit = body(found)["hits"][0]  # the text item is still first, and still the JSON
        links = found.content[1:]
        assert len(links) == 1 and links[0].type == "resource_link"
        link = links[0].uri
        assert link == pinned_uri(Citation(**hit["citation"]))
        assert links[0].annotations is not None
        assert links[0].annotations.last_modified == hit["updated_at"]
        old_text = f"# {hit['title']}\n\n{hit['snippet']}"

        read = body(
            await client.call_tool(
                "read_knowledge_article",
                {"knowledge_base_id": data.kb, "article_id": data.password},
            )
        )
        assert read["citation"] == hit["citation"]

        pinned = await client.read_resource(link)
        pinned_text = text_contents(pinned)
        assert pinned_text.text == old_text
        assert pinned_text.meta is not None
        assert pinned_text.meta["lastModified"] == hit["updated_at"]
        assert pinned.ttl_ms >= 365 * 24 * 3600 * 1000  # a pinned version never changes

        save(db, data.kb, data.password, "Passwords are reset from the Account page now.")
        current_uri = article_uri(data.kb, data.password)
        current = await client.read_resource(current_uri)
        assert current.ttl_ms == 0
        current_text = text_contents(current)
        assert current_text.text.endswith("from the Account page now.")
        assert current_text.meta is not None
        assert current_text.meta["lastModified"] > hit["updated_at"]
        again = await client.read_resource(link, cache_mode="bypass")
        assert text_contents(again).text == old_text

        # Unpublished: the current URI says so and when; the pinned one still answers.
        subprocess.run([KBES, "article", "unpublish", data.password, "--kb", data.kb,
                        "--db", db], check=True, capture_output=True)  # fmt: skip
        gone = await refusal(client, current_uri)
        assert gone["rpc"] == -32010 and gone["data"]["code"] == "gone"
        assert "unpublished at" in gone["message"] and gone["data"]["unpublished_at"]
        assert text_contents(await client.read_resource(link, cache_mode="bypass")).text == old_text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_drafts_and_other_knowledge_bases_read_as_unknown_ids(
    data: Seed, transport: str, tmp_path: Path
) -> None:
    db = str(data.db)
    random_kb, random_article = str(uuid.uuid4()), str(uuid.uuid4())
    other_version = draft_version(db, data.other_article)
    draft_at = draft_version(db, data.draft)
    async with connect(transport, db, data, tmp_path) as client:
        # A draft of a granted knowledge base, current and pinned, reads as a random article.
        for draft, unknown in [
            (article_uri(data.kb, data.draft), article_uri(data.kb, random_article)),
            (
                pinned_uri(Citation(knowledge_base_id=data.kb, article_id=data.draft,
                                    updated_at=draft_at)),
                pinned_uri(Citation(knowledge_base_id=data.kb, article_id=random_article,
                                    updated_at=draft_at)),
            ),
        ]:  # fmt: skip
            a, b = await refusal(client, draft), await refusal(client, unknown)
            assert a["rpc"] == -32602 and a["data"]["code"] == "not_found"
            assert masked(a, data.draft) == masked(b, random_article)
        # Another knowledge base (not granted) reads as a random knowledge base.
        for theirs, nobodys in [
            (
                article_uri(data.other_kb, data.other_article),
                article_uri(random_kb, random_article),
            ),
            (
                pinned_uri(Citation(knowledge_base_id=data.other_kb,
                                    article_id=data.other_article, updated_at=other_version)),
                pinned_uri(Citation(knowledge_base_id=random_kb, article_id=random_article,
                                    updated_at=other_version)),
            ),
            (knowledge_base_uri(data.other_kb), knowledge_base_uri(random_kb)),
        ]:  # fmt: skip
            a, b = await refusal(client, theirs), await refusal(client, nobodys)
            assert a["rpc"] == -32602 and a["data"]["code"] == "not_found"
            assert masked(a, data.other_kb, data.other_article) == masked(
                b, random_kb, random_article
            )
        # An article of a granted knowledge base under another knowledge base's id: unknown.
        a = await refusal(client, article_uri(data.kb, data.other_article))
        b = await refusal(client, article_uri(data.kb, random_article))
        assert masked(a, data.other_article) == masked(b, random_article)


# Push ------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Seed, dict]]:
    """(db, seed, env for every kbes process) on SQLite, or on a throwaway PostgreSQL."""
    if request.param == "sqlite":
        in_file = seed(tmp_path / "kbes.sqlite")
        yield str(in_file.db), in_file, {}
        return
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    from pg_server import running_pg

    for pg in running_pg():
        url = pg.create_database()
        env = {"KBES_VIEWS": str(tmp_path / "views-seed.sqlite")}
        saved = os.environ.get("KBES_VIEWS")
        os.environ.update(env)
        try:
            data = seed(url)
        finally:
            if saved is None:
                os.environ.pop("KBES_VIEWS", None)
            else:
                os.environ["KBES_VIEWS"] = saved
        yield url, data, {"KBES_VIEWS": str(tmp_path / "views-server.sqlite")}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_save_in_another_process_rings_only_granted_current_listeners(
    backend: tuple[str, Seed, dict[str, str]], transport: str, tmp_path: Path
) -> None:
    db, data, env = backend
    writer_env = {"KBES_VIEWS": str(tmp_path / "views-writer.sqlite")} if env else {}
    article = article_uri(data.kb, data.password)
    marker = article_uri(data.kb, data.billing)  # every listener hears it, after the rest
    heard: dict[str, list[tuple[float, str]]] = {"article": [], "kb": [], "other": [], "draft": []}
    asked = {
        "article": [article, marker],
        "kb": [knowledge_base_uri(data.kb), marker],
        "other": [article_uri(data.other_kb, data.other_article), marker],
        "draft": [article_uri(data.kb, data.draft), marker],
    }
    async with (
        connect(transport, db, data, tmp_path, env) as client,
        anyio.create_task_group() as tasks,
    ):
        ready = 0

        async def listen(name: str) -> None:
            nonlocal ready
            async with client.listen(resource_subscriptions=asked[name]) as stream:
                assert stream.honored.resource_subscriptions == asked[name]
                ready += 1
                async for event in stream:
                    assert isinstance(event, ResourceUpdated)
                    heard[name].append((time.monotonic(), event.uri))

        for name in asked:
            tasks.start_soon(listen, name)
        with anyio.fail_after(10):
            while ready < len(asked):
                await anyio.sleep(0.01)

        # The draft and the other knowledge base change first: nobody may hear of those.
        await anyio.to_thread.run_sync(save, db, data.kb, data.draft, "Draft edit.", writer_env)
        await anyio.to_thread.run_sync(
            save, db, data.other_kb, data.other_article, "Rotate weekly.", writer_env
        )
        await anyio.to_thread.run_sync(
            save, db, data.kb, data.password, "Reset it from the Account page.", writer_env
        )
        saved_at = time.monotonic()
        with anyio.fail_after(5):
            while not heard["article"] or not heard["kb"]:
                await anyio.sleep(0.01)
        # A later save that rings everyone: a wrong ring of the saves above comes before it.
        await anyio.to_thread.run_sync(
            save, db, data.kb, data.billing, "Invoices go out on the 1st.", writer_env
        )
        with anyio.fail_after(10):
            while not all(any(uri == marker for _, uri in rings) for rings in heard.values()):
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()

    before = {name: before_marker(rings, marker) for name, rings in heard.items()}
    kb = knowledge_base_uri(data.kb)
    assert before == {"article": [article], "kb": [kb], "other": [], "draft": []}
    assert heard["article"][0][0] - saved_at < 1.0


def before_marker(rings: list[tuple[float, str]], marker: str) -> list[str]:
    """The URIs a listener heard before the marker's ring."""
    uris = [uri for _, uri in rings]
    return uris[: uris.index(marker)]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_handshake_era_clients_subscribe_with_the_same_rules(
    data: Seed, transport: str, tmp_path: Path
) -> None:
    """2025-era clients have no subscriptions/listen; kbes serves resources/subscribe."""
    db = str(data.db)
    heard: list[tuple[float, str]] = []

    async def messages(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append((time.monotonic(), message.params.uri))

    article = article_uri(data.kb, data.password)
    marker = article_uri(data.kb, data.billing)

    async def marker_save(content: str, rings: int) -> None:
        """A later save that rings: a wrong ring of the saves before it comes before it."""
        await anyio.to_thread.run_sync(save, db, data.kb, data.billing, content)
        with anyio.fail_after(10):
            while [uri for _, uri in heard].count(marker) < rings:
                await anyio.sleep(0.01)

    async with connect(transport, db, data, tmp_path, mode="legacy", message_handler=messages) as (
        client
    ):
        assert client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        resources = client.server_capabilities.resources
        assert resources is not None and resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for uri in (
                article,
                article_uri(data.other_kb, data.other_article),
                article_uri(data.kb, data.draft),
                marker,
            ):
                await client.subscribe_resource(uri)
        await anyio.to_thread.run_sync(save, db, data.kb, data.draft, "Draft edit.")
        await anyio.to_thread.run_sync(
            save, db, data.other_kb, data.other_article, "Rotate weekly."
        )
        await anyio.to_thread.run_sync(save, db, data.kb, data.password, "From Account.")
        saved_at = time.monotonic()
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
        await marker_save("Invoices go out on the 1st.", 1)
        # Unsubscribed: no more rings.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.unsubscribe_resource(article)
        await anyio.to_thread.run_sync(save, db, data.kb, data.password, "From Settings.")
        await marker_save("Invoices go out on the 2nd.", 2)
    assert [uri for _, uri in heard] == [article, marker, marker]
    assert heard[0][0] - saved_at < 1.0
