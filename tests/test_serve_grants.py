"""`kbes serve --grant` in every form it takes: an id (repeatable), ids separated by commas, and
`*` for every knowledge base (what one Claude Desktop bundle setting passes); `--grant-all` as
before. What a form grants is what the official client can reach over stdio."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp_harness import Seed, body, error, seed, stdio_client

from kbes import open_store
from kbes.cli import main

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return seed(tmp_path_factory.mktemp("grants") / "kbes.sqlite")


async def reachable(db: Path, *serve_args: str, probe: list[str]) -> list[str]:
    """Which of the knowledge bases in `probe` a client of `kbes serve SERVE_ARGS` can search."""
    reached = []
    async with stdio_client(db, *serve_args) as client:
        for kb in probe:
            result = await client.call_tool(
                "search_knowledge_base", {"knowledge_base_id": kb, "query": "password"}
            )
            if result.is_error:
                assert error(result)["code"] == "not_found"
            else:
                assert body(result)["hits"]
                reached.append(kb)
    return reached


@pytest.mark.slow
@pytest.mark.parametrize(
    ("grant", "both"),
    [
        (["--grant", "{kb}"], False),
        (["--grant", "{kb}", "--grant", "{other}"], True),
        (["--grant", "{kb},{other}"], True),
        (["--grant", "{other},{kb},{kb}"], True),
        (["--grant", "*"], True),
        (["--grant-all"], True),
    ],
    ids=["one", "repeated", "comma-separated", "repeated-in-a-list", "star", "grant-all"],
)
async def test_each_form_grants_what_it_says(data: Seed, grant: list[str], both: bool) -> None:
    args = [a.format(kb=data.kb, other=data.other_kb) for a in grant]
    reached = await reachable(data.db, *args, probe=[data.kb, data.other_kb])
    assert reached == ([data.kb, data.other_kb] if both else [data.kb])


@pytest.mark.slow
async def test_star_grants_knowledge_bases_made_later(tmp_path: Path) -> None:
    """`*` is --grant-all: a knowledge base created while the server runs is granted too."""
    ids = seed(tmp_path / "kbes.sqlite")
    async with stdio_client(ids.db, "--grant", "*") as client:
        store = open_store(ids.db)
        try:
            later = str(store.create_knowledge_base("Later"))
            store.add_article(later, "Password policy", "Twelve characters.", publish=True)
        finally:
            store.close()
        result = await client.call_tool(
            "search_knowledge_base", {"knowledge_base_id": later, "query": "password"}
        )
        assert [hit["title"] for hit in body(result)["hits"]] == ["Password policy"]


@pytest.mark.parametrize(
    ("grant", "message"),
    [
        (["{kb},*"], "'*' grants every knowledge base: give it alone"),
        (["*", "{kb}"], "'*' grants every knowledge base: give it alone"),
        (["{kb},,{other}"], "no knowledge base '' in this database"),
        (["{kb},"], "no knowledge base '' in this database"),
        (["{kb}, {other}"], "no knowledge base ' {other}' in this database"),  # padded: no id
        (["{kb},{random}"], "no knowledge base '{random}' in this database"),
        (["{kb},not-an-id"], "no knowledge base 'not-an-id' in this database"),
        (["{random}"], "no knowledge base '{random}' in this database"),
    ],
)
def test_bad_grant_lists_are_refused_naming_the_part_at_fault(
    data: Seed, grant: list[str], message: str
) -> None:
    values = {"kb": data.kb, "other": data.other_kb, "random": str(uuid.uuid4())}
    argv = ["serve", "--db", str(data.db)]
    for value in grant:
        argv += ["--grant", value.format(**values)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert message.format(**values) in " ".join(result.output.split())
    assert "kbes kb list" in result.output or "give it alone" in result.output
