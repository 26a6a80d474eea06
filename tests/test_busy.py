"""A write lock held by another process past the lock timeout (KBES_LOCK_TIMEOUT) is a clear
`busy` ("retry"), never a hang nor a traceback: through `kbes tool`, a CLI command and a real
`kbes serve` driven by the SDK's client. The holder is a real second process in BEGIN
IMMEDIATE, as another writer mid-transaction is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import KBES, Seed, event_count, seed, stdio_client

pytestmark = pytest.mark.slow

HOLD = (
    "import sqlite3, sys, time\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def world(tmp_path: Path) -> Seed:
    """A seeded database with its views caught up, so reads take no write lock."""
    seeded = seed(tmp_path / "kbes.sqlite")
    assert kbes(seeded.db, "kb", "list").returncode == 0
    return seeded


@pytest.fixture
def locked(world: Seed) -> Iterator[Seed]:
    """The database with its write lock held by another process until the test ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(world.db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield world
    finally:
        holder.kill()
        holder.wait()


def env(timeout: str = "1") -> dict[str, str]:
    return {**os.environ, "KBES_LOCK_TIMEOUT": timeout}


def kbes(db: Path, *args: str, timeout: str = "1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KBES, *args, "--db", str(db)], capture_output=True, text=True, timeout=60,
        env=env(timeout), check=False,
    )  # fmt: skip


def edit(world: Seed) -> list[str]:
    read = kbes(world.db, "tool", "read_knowledge_article", f"knowledge_base_id={world.kb}",
                f"article_id={world.password}")  # fmt: skip
    version = json.loads(read.stdout)["updated_at"]  # a read under the lock is answered
    return ["tool", "edit_knowledge_article", f"knowledge_base_id={world.kb}",
            f"article_id={world.password}", "content=New text.",
            f"expected_version={version}", "idempotency_key=k1"]  # fmt: skip


def test_kbes_tool_answers_busy_after_the_timeout(world: Seed, locked: Seed) -> None:
    arguments = edit(world)
    before = event_count(world.db)
    started = time.monotonic()
    result = kbes(world.db, *arguments)
    assert time.monotonic() - started < 30
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    error = json.loads(result.stdout)
    assert error["code"] == "busy", error
    assert "retry" in error["message"]
    assert "KBES_LOCK_TIMEOUT" in error["message"]
    assert event_count(world.db) == before


def test_a_cli_write_prints_one_line(world: Seed, locked: Seed) -> None:
    result = kbes(world.db, "article", "add", "--kb", world.kb, "--title", "T", "--content", "c")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "busy" in lines[0] and "retry" in lines[0], lines


def test_over_mcp_a_held_lock_is_busy(world: Seed, monkeypatch: pytest.MonkeyPatch) -> None:
    arguments = dict(a.split("=", 1) for a in edit(world)[2:])
    holder: list[subprocess.Popen[str]] = []

    async def session() -> Any:
        client = stdio_client(world.db, "--grant-all", "--edits", "allow")
        async with client:
            query = {"knowledge_base_id": world.kb, "query": "password"}
            await client.call_tool("search_knowledge_base", query)
            process = subprocess.Popen(
                [sys.executable, "-c", HOLD, str(world.db)], stdout=subprocess.PIPE, text=True
            )
            holder.append(process)
            assert process.stdout is not None and process.stdout.readline().strip() == "locked"
            with anyio.fail_after(30):
                return await client.call_tool("edit_knowledge_article", arguments)

    monkeypatch.setenv("KBES_LOCK_TIMEOUT", "1")  # the server's environment (stdio_client)
    try:
        answer = anyio.run(session)
    finally:
        for process in holder:
            process.kill()
            process.wait()
    assert answer.is_error
    error = json.loads(answer.content[0].text)
    assert error["code"] == "busy", error
    assert "retry" in error["message"]


def test_a_bad_lock_timeout_is_refused_by_name(world: Seed) -> None:
    result = kbes(world.db, "kb", "list", timeout="soon")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert "KBES_LOCK_TIMEOUT" in result.stderr and "whole number" in result.stderr
