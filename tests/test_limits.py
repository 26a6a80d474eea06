"""Limits on every door (issue 13): the content, title and idempotency-key limits of
`kbes.domain.limits` hold for agents, `kbes article add/save` and `kbes import` alike, with the same
defaults the tools' schemas advertise; an environment variable changes a limit for every door
and for the advertised schema at once (a store's settings, read when it is opened)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_harness import ok
from click.testing import CliRunner
from mcp_harness import stdio_client
from tool_calls import call

from kbes import KnowledgeBaseStore
from kbes.cli import main
from kbes.domain.errors import InvalidArgument
from kbes.tools import TOOLS

KBES = str(Path(sys.executable).parent / "kbes")


def test_the_schema_advertises_the_default_limits() -> None:
    properties = TOOLS["edit_knowledge_article"].input_schema()["properties"]
    assert properties["content"]["maxLength"] == 1_000_000
    assert properties["title"]["maxLength"] == 300
    assert properties["idempotency_key"]["maxLength"] == 200


def test_a_person_cannot_store_content_an_agent_could_not_write_back(
    runner: CliRunner, tmp_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n" + "x" * 1_000_001)
    added = runner.invoke(main, ["article", "add", "--kb", kb, "--file", str(big)])
    assert added.exit_code == 2, added.output
    assert "--content / --file" in added.output and "1000000" in added.output
    article = ok(runner, "article", "add", "--kb", kb, "--title", "Small", "--content", "x").strip()
    saved = runner.invoke(main, ["article", "save", "--kb", kb, article, "--file", str(big)])
    assert saved.exit_code == 2, saved.output
    assert "1000000" in saved.output
    # Exactly at the limit is fine: what a person stores, an agent can write back.
    big.write_text("# Big\n\n" + "x" * 1_000_000)
    ok(runner, "article", "save", "--kb", kb, article, "--file", str(big))


def test_an_import_skips_an_over_long_file_and_names_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    """One file over the limit is skipped with its reason (exit 3), and writes nothing of its
    own; the rest of the folder is imported (issue 33: one odd file never blocks the rest)."""
    kb = ok(runner, "kb", "create", "Support").strip()
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "small.md").write_text("# Small\n\ntext\n")
    (folder / "huge.md").write_text("# Huge\n\n" + "x" * 1_000_001)
    result = runner.invoke(main, ["import", str(folder), "--kb", kb])
    assert result.exit_code == 3, result.output
    assert "huge.md: the content is 1000001 characters; the limit is 1000000" in result.output
    listed = json.loads(ok(runner, "article", "list", "--kb", kb, "--json"))
    assert [a["title"] for a in listed] == ["Small"]


def test_the_library_refuses_an_over_long_key(store: KnowledgeBaseStore, kb: str) -> None:
    article = str(store.add_article(kb, "Refunds", "text", publish=True))
    version = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    head = store.head()
    for key, field in (("k" * 201, "idempotency_key"), ("", "idempotency_key")):
        with pytest.raises(InvalidArgument) as info:
            store.edit_article(
                store.require_knowledge_base(kb),
                article,
                "new text",
                expected_version=datetime.fromisoformat(version["updated_at"]),
                idempotency_key=key,
            )
        assert info.value.field == field
    assert store.head() == head


def kbes(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KBES, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "KBES_DB": str(db), **env},
        timeout=60,
    )


@pytest.mark.slow
def test_environment_variables_set_the_limits_for_every_door(db_path: Path) -> None:
    limits = {
        "KBES_MAX_CONTENT_CHARS": "20",
        "KBES_MAX_TITLE_CHARS": "10",
        "KBES_MAX_IDEMPOTENCY_KEY_CHARS": "8",
    }
    kb = kbes(db_path, "kb", "create", "Support").stdout.strip()
    added = kbes(db_path, "article", "add", "--kb", kb, "--title", "T", "--content", "x" * 21,
                 "--publish", **limits)  # fmt: skip
    assert added.returncode == 2 and "the limit is 20 (KBES_MAX_CONTENT_CHARS)" in added.stderr
    titled = kbes(db_path, "article", "add", "--kb", kb, "--title", "t" * 11, "--content", "x",
                  **limits)  # fmt: skip
    assert titled.returncode == 2 and "the limit is 10 (KBES_MAX_TITLE_CHARS)" in titled.stderr
    article = kbes(db_path, "article", "add", "--kb", kb, "--title", "T", "--content", "x",
                   "--publish", **limits).stdout.strip()  # fmt: skip
    reading = ["tool", "read_knowledge_article", f"knowledge_base_id={kb}", f"article_id={article}"]
    read = json.loads(kbes(db_path, *reading).stdout)
    edit = ["tool", "edit_knowledge_article", f"knowledge_base_id={kb}", f"article_id={article}",
            f"expected_version={read['updated_at']}"]  # fmt: skip
    for args, field in (
        (["content=" + "y" * 21, "idempotency_key=k"], "content"),
        (["content=y", "idempotency_key=" + "k" * 9], "idempotency_key"),
        (["content=y", "idempotency_key=k", "title=" + "t" * 11], "title"),
    ):
        refused = kbes(db_path, *edit, *args, **limits)
        assert refused.returncode != 0
        assert json.loads(refused.stdout or refused.stderr)["field"] == field, refused
    # The schema advertised is the store's: from the library, and as `kbes serve` lists it.
    schema = subprocess.run(
        [sys.executable, "-c", "import json, sys; from kbes import open_store; "
         "from kbes.tools import TOOLS; store = open_store(sys.argv[1]); "
         "print(json.dumps(TOOLS['edit_knowledge_article'].input_schema(store.limits)))",
         str(db_path)],
        capture_output=True, text=True, env={**os.environ, **limits}, check=True,
    )  # fmt: skip
    for listed in (json.loads(schema.stdout), served_edit_schema(db_path, limits)):
        properties = listed["properties"]
        assert properties["content"]["maxLength"] == 20
        assert properties["title"]["maxLength"] == 10
        assert properties["idempotency_key"]["maxLength"] == 8


def served_edit_schema(db: Path, env: dict[str, str]) -> dict[str, Any]:
    """The edit tool's input schema as `kbes serve`, started with `env`, lists it."""

    async def listed() -> dict[str, Any]:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            client = stdio_client(db, "--grant-all")  # the server's environment: this one's
        async with client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return tools["edit_knowledge_article"].input_schema

    return anyio.run(listed)


@pytest.mark.slow
def test_a_malformed_limit_is_a_clear_error(db_path: Path) -> None:
    result = kbes(db_path, "kb", "list", KBES_MAX_CONTENT_CHARS="lots")
    assert result.returncode != 0
    assert "KBES_MAX_CONTENT_CHARS='lots'" in result.stderr
    assert "Traceback" not in result.stderr
