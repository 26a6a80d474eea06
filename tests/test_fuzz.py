"""Hostile input through every door: the five agent tools called with arbitrary arguments
(tests/fuzz_inputs.py) through the library, `kbes tool` and a real `kbes serve` over MCP
stdio. Each answer is a result or a readable error (a documented `code` and a message; never
`internal_error`, a traceback or, over MCP, a hang), and a refused call writes no event.

CI runs the `ci` hypothesis profile (tests/conftest.py); a longer run:
`HYPOTHESIS_PROFILE=long pytest tests/test_fuzz.py` (see docs/security.md)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from click.testing import CliRunner
from fuzz_inputs import ARGUMENTS, resolve
from hypothesis import event, given
from mcp import Client
from mcp_harness import Seed, seed, stdio_client

from kbes import KnowledgeBaseStore, open_store
from kbes.cli import main
from kbes.tools import TOOLS, call_tool
from kbes.tools.codes import KbesError
from kbes.tools.wire import Wire

ROOT = Path(__file__).resolve().parent.parent

DOCUMENTED = {
    "invalid_argument", "not_found", "gone", "version_conflict", "idempotency_key_reused",
    "unsupported_resource_type", "invalid", "unavailable", "approval_required",
    "edit_declined", "edits_disabled",
}  # fmt: skip
"""The codes docs/tools.md lists; `internal_error` is not among them on purpose."""

HANG = 30
"""Seconds an MCP call may take before it counts as a hang (each takes far less)."""


def test_every_code_the_fuzz_accepts_is_documented() -> None:
    page = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    assert {code for code in DOCUMENTED if f"`{code}`" not in page} == set()


class Fixture:
    """One seeded database shared by a door's examples, and a store to watch its log."""

    def __init__(self, db: Path) -> None:
        self.store_path = db
        self.seed: Seed = seed(db)
        self.store: KnowledgeBaseStore = open_store(db)
        kb = self.seed.kb
        retired = self.store.add_article(kb, "Retired", "No longer served.", publish=True)
        self.store.unpublish_article(kb, retired)
        self.ids = {**vars(self.seed), "retired": str(retired)}

    def head(self) -> int:
        return self.store.head()

    def resolve(self, arguments: Any) -> Any:
        return resolve(arguments, self.ids, self.store)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fixture]:
    fixture = Fixture(tmp_path_factory.mktemp("fuzz") / "kbes.sqlite")
    yield fixture
    fixture.store.close()


EXAMPLES: Counter[tuple[str, str, str]] = Counter()
"""(door, tool, outcome) -> examples run; printed after the module (`pytest -s`)."""


@pytest.fixture(scope="module", autouse=True)
def _count() -> Iterator[None]:
    yield
    if not EXAMPLES:
        return
    print("\nfuzz examples per door and tool (answered / refused by code):")
    for door, tool in sorted({(d, t) for d, t, _ in EXAMPLES}):
        outcomes = {o: n for (d, t, o), n in EXAMPLES.items() if (d, t) == (door, tool)}
        print(f"  {door:8} {tool:24} {sum(outcomes.values()):5}  {dict(sorted(outcomes.items()))}")


def count(door: str, name: str, outcome: str) -> None:
    EXAMPLES[door, name, outcome] += 1
    event(outcome)


def readable(error: dict[str, Any]) -> None:
    """A refusal an agent can act on: a documented code and a message."""
    assert error.get("code") in DOCUMENTED, error
    assert isinstance(error.get("message"), str) and error["message"], error


def settle(world: Fixture, door: str, name: str, before: int, outcome: str) -> None:
    """Count the example; a call that was not an answered edit wrote nothing."""
    count(door, name, outcome)
    if outcome == "answered" and name == "edit_knowledge_article":
        return
    after = world.head()
    assert after == before, f"{name} wrote {after - before} event(s) but was {outcome}"


def owned_by_the_grant(world: Fixture, name: str, answer: dict[str, Any]) -> None:
    """A success names the granted knowledge base: the other one is never reached."""
    kb = answer.get("knowledge_base_id", answer.get("resource_id"))
    assert kb == world.seed.kb, (name, answer)


# The library ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_library(world: Fixture, name: str) -> None:
    @given(arguments=ARGUMENTS[name])
    def example(arguments: dict[str, Any]) -> None:
        arguments = world.resolve(arguments)
        before = world.head()
        try:
            result = call_tool(world.store, name, arguments, frozenset({world.seed.kb}))
        except KbesError as e:
            readable(e.to_dict())
            # The error may echo the caller's own lone surrogate: JSON text escapes it.
            json.dumps(e.to_dict())
            outcome = e.code
        else:
            assert isinstance(result, Wire)
            owned_by_the_grant(world, name, msgspec.to_builtins(result))
            outcome = "answered"
        settle(world, "library", name, before, outcome)

    example()


# `kbes tool` ---------------------------------------------------------------------------


def shell_arguments(arguments: dict[str, Any]) -> list[str]:
    """Each argument as `key:=json`, as a person would type raw JSON (`json.dumps` escapes a
    lone surrogate, as a shell could not pass one)."""
    return [f"{key}:={json.dumps(value)}" for key, value in arguments.items()]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_kbes_tool(world: Fixture, name: str) -> None:
    """`kbes tool` serves the four default tools; the diff tool is MCP-only
    (`kbes serve --history-tools`), so this door has four."""
    runner = CliRunner()

    @given(arguments=ARGUMENTS[name])
    def example(arguments: dict[str, Any]) -> None:
        arguments = world.resolve(arguments)
        before = world.head()
        args = ["tool", name, "--db", str(world.store_path), *shell_arguments(arguments)]
        result = runner.invoke(main, args)
        assert result.exit_code in (0, 1, 2), (result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert "Traceback" not in result.output
        if result.exit_code == 2:
            # A usage error (a key click cannot take): said on stderr, nothing run.
            assert "Error:" in result.stderr, result.output
            outcome = "usage error"
        else:
            # `kbes tool` is a person's door: no grants, so any knowledge base answers.
            answer = json.loads(result.stdout)
            outcome = "answered"
            if result.exit_code == 1:
                readable(answer)
                outcome = answer["code"]
        settle(world, "cli", name, before, outcome)

    example()


# MCP stdio -----------------------------------------------------------------------------


class Server:
    """One real `kbes serve` for the module's examples, driven through the official client
    from a portal thread, so hypothesis's synchronous examples can call it."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        async def bounded() -> Any:
            with anyio.fail_after(HANG):
                return await self.client.call_tool(name, arguments)

        return self.portal.call(bounded)


@pytest.fixture(scope="module")
def server(world: Fixture) -> Iterator[Server]:
    with ExitStack() as stack:
        portal = stack.enter_context(start_blocking_portal("asyncio"))
        client = stdio_client(
            world.store_path, "--grant", world.seed.kb, "--history-tools", "--edits", "allow"
        )
        stack.enter_context(portal.wrap_async_context_manager(client))
        yield Server(portal, client)


def without_surrogates(value: Any) -> Any:
    """`value` with each lone surrogate replaced by U+FFFD. The official client cannot send
    one (it encodes to UTF-8 first); a raw line escaping one gets -32700 from the server, which
    tests/test_stdio_lines.py holds."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(item) for item in value]
    return value


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_mcp_stdio(world: Fixture, server: Server, name: str) -> None:
    @given(arguments=ARGUMENTS[name])
    def example(arguments: dict[str, Any]) -> None:
        arguments = without_surrogates(world.resolve(arguments))
        before = world.head()
        # A protocol error (MCPError) or a timeout fails the example as it is raised.
        result = server.call(name, arguments)
        # The answer's JSON first; search hits and reads add a resource_link per citation.
        assert result.content[0].type == "text"
        assert all(item.type == "resource_link" for item in result.content[1:])
        assert not result.content[1:] or not result.is_error
        answer = json.loads(result.content[0].text)
        outcome = "answered"
        if result.is_error:
            readable(answer)
            outcome = answer["code"]
        else:
            assert result.structured_content == answer
            owned_by_the_grant(world, name, answer)
        settle(world, "mcp", name, before, outcome)

    example()


# Defects the fuzz found, held by plain tests -------------------------------------------

SURROGATE_CALLS = [
    ("edit_knowledge_article", "content"),
    ("edit_knowledge_article", "title"),
    ("edit_knowledge_article", "expected_version"),
    ("edit_knowledge_article", "idempotency_key"),
    ("diff_knowledge_article", "since_version"),
]


@pytest.mark.parametrize(("name", "field"), SURROGATE_CALLS)
def test_a_lone_surrogate_is_invalid_argument_naming_its_field(
    world: Fixture, name: str, field: str
) -> None:
    """Found by the fuzz: a lone surrogate in a date-time escaped as UnicodeEncodeError from
    msgspec, and in an edit's content or title as a UnicodeEncodeError while storing the event
    (a traceback from `kbes tool`)."""
    plausible = {
        "knowledge_base_id": world.seed.kb,
        "article_id": world.seed.password,
        "content": "New text.",
        "title": "New title",
        "expected_version": "2026-01-01T00:00:00Z",
        "since_version": "2026-01-01T00:00:00Z",
        "idempotency_key": "k-surrogate",
        "query": "password",
    }
    fields = {
        "edit_knowledge_article": [
            "knowledge_base_id", "article_id", "content", "expected_version", "idempotency_key",
            "title",
        ],
        "diff_knowledge_article": ["knowledge_base_id", "article_id", "since_version"],
    }[name]  # fmt: skip
    arguments = {key: plausible[key] for key in fields} | {field: "a\ud800b"}
    before = world.head()
    with pytest.raises(KbesError) as info:
        call_tool(world.store, name, arguments)
    assert info.value.to_dict()["field"] == field
    assert info.value.code == "invalid_argument"
    assert "lone surrogate" in info.value.message
    result = CliRunner().invoke(
        main, ["tool", name, "--db", str(world.store_path), *shell_arguments(arguments)]
    )
    if name in TOOLS:
        assert result.exit_code == 1, result.output
        assert json.loads(result.stdout)["field"] == field
    assert world.head() == before
