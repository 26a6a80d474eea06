"""A store that cannot write (a full disk, a read-only file) is `unavailable` ("retry later,
nothing written") over MCP, and a one-line error at the CLI, never a traceback nor a generic
`internal_error`. Each condition is real: SQLite's own page limit (SQLITE_FULL) and
`query_only` (SQLITE_READONLY) in process; a file size limit (RLIMIT_FSIZE, what a full disk
looks like to a writer) and an immutable or read-only file for the CLI's own process. Also the
two other tracebacks of defect 9: printing a lone surrogate from `kbes tool`."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.client import Client
from mcp_harness import KBES

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.cli import main
from kbes.domain.errors import Unavailable
from kbes.server.mcp_server import KbesMCP
from kbes.store.sqlite import FeedApplicationRecorder
from kbes.tools.codes import KbesError
from kbes.tools.refusals import refusal


def head(store: KnowledgeBaseStore) -> int:
    return store.head()


def pragma(store: KnowledgeBaseStore, *statements: str) -> None:
    """Run PRAGMAs on the store's writer connection, the one every write goes through."""
    assert isinstance(store.log.recorder, FeedApplicationRecorder)
    with store.log.recorder.datastore.get_connection(commit=True) as connection:
        cursor = connection.cursor()
        for statement in statements:
            cursor.execute(statement)


def fill(store: KnowledgeBaseStore) -> None:
    """The database may not grow by one page: SQLite answers SQLITE_FULL, as on a full disk."""
    assert isinstance(store.log.recorder, FeedApplicationRecorder)
    with store.log.recorder.datastore.get_connection(commit=True) as connection:
        cursor = connection.cursor()
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
    pragma(store, f"PRAGMA max_page_count={pages}")


@pytest.fixture
def seeded(store: KnowledgeBaseStore, kb: str) -> dict[str, str]:
    article = str(store.add_article(kb, "VPN", "Connect to vpn.example.", publish=True))
    read = call_tool(store, "read_knowledge_article", {"knowledge_base_id": kb,
                                                       "article_id": article})  # fmt: skip
    return {"kb": kb, "article": article, "version": read.updated_at}


def edit_arguments(seeded: dict[str, str], size: int = 200_000) -> dict[str, Any]:
    return {"knowledge_base_id": seeded["kb"], "article_id": seeded["article"],
            "content": "x" * size, "expected_version": seeded["version"],
            "idempotency_key": "k"}  # fmt: skip


@pytest.mark.parametrize(
    ("make", "why"),
    [(fill, "full"), (lambda s: pragma(s, "PRAGMA query_only=1"), "read-only")],
)
def test_a_store_that_cannot_write_is_unavailable(
    store: KnowledgeBaseStore, seeded: dict[str, str], make: Any, why: str
) -> None:
    before = head(store)
    make(store)
    for write in (
        lambda: call_tool(store, "edit_knowledge_article", edit_arguments(seeded)),
        lambda: store.add_article(seeded["kb"], "New", "y" * 200_000),
    ):
        with pytest.raises((KbesError, Unavailable)) as info:
            write()
        # The tool answers the wire's refusal; the library raises the fact it is worded from.
        refused = info.value
        wire = refusal(refused) if isinstance(refused, Unavailable) else refused
        assert isinstance(wire, KbesError)
        error = wire.to_dict()
        assert error["code"] == "unavailable", error
        assert "retry later" in error["message"]
        assert "nothing was written" in error["message"]
        assert why in error["message"]
    pragma(store, "PRAGMA query_only=0", "PRAGMA max_page_count=1073741823")
    assert head(store) == before


def test_over_mcp_a_full_store_is_unavailable_not_internal_error(
    store: KnowledgeBaseStore, seeded: dict[str, str]
) -> None:
    server = KbesMCP(store, grants=None, edits="allow")
    fill(store)

    async def session() -> Any:
        async with Client(server.server) as client:
            return await client.call_tool("edit_knowledge_article", edit_arguments(seeded))

    answer = anyio.run(session)
    assert answer.is_error
    assert json.loads(answer.content[0].text)["code"] == "unavailable"


# The CLI in its own process, under a real condition -------------------------------------------


def run_kbes(db: Path, *args: str, file_limit: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        if file_limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, as a full disk's ENOSPC
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.run(
        [KBES, *args, "--db", str(db)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
        check=False,
    )


@pytest.fixture
def on_disk(db_path: Path, store: KnowledgeBaseStore, seeded: dict[str, str]) -> dict[str, Any]:
    for n in range(30):  # enough text that a rebuild writes far past the file limit
        store.add_article(seeded["kb"], f"Page {n}", f"page {n} " * 4_000, publish=True)
    call_tool(store, "search_knowledge_base", {"knowledge_base_id": seeded["kb"],
                                               "query": "page"})  # fmt: skip
    store.close()
    big = db_path.parent / "big.md"
    big.write_text("# Big\n\n" + "z" * 400_000 + "\n")
    return {**seeded, "big": str(big), "db": db_path}


def events(db: Path) -> int:
    store = open_store(db)
    try:
        return head(store)
    finally:
        store.close()


def assert_one_line(result: subprocess.CompletedProcess, code: int, *words: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if "replaying" not in line]
    assert len(lines) == 1, result.stderr  # beside rebuild's progress line
    for word in words:
        assert word in lines[0], result.stderr


def cli_writes(world: dict[str, Any]) -> dict[str, list[str]]:
    edit = edit_arguments(world, size=100_000)  # an argument of at most 128 KiB
    return {
        "article add": ["article", "add", "--kb", world["kb"], "--file", world["big"]],
        "rebuild": ["rebuild"],
        "edit": ["tool", "edit_knowledge_article",
                 *(f"{key}={value}" for key, value in edit.items())],
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("command", ["article add", "rebuild", "edit"])
def test_cli_on_a_full_disk_prints_one_line(on_disk: dict[str, Any], command: str) -> None:
    before = events(on_disk["db"])
    result = run_kbes(on_disk["db"], *cli_writes(on_disk)[command], file_limit=64 * 1024)
    if command == "edit":  # kbes tool prints the agent's error JSON on stdout
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert json.loads(result.stdout)["code"] == "unavailable"
    else:
        assert_one_line(result, 1, "unavailable", "retry later")
    assert events(on_disk["db"]) == before


@pytest.fixture
def read_only(on_disk: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The database file made read-only for this user: `chattr +i` for root (whom file modes
    do not stop), mode 0444 for anyone else."""
    db: Path = on_disk["db"]
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"root is stopped only by an immutable file, and chattr failed here: "
                        f"{made.stderr.decode().strip()}")  # fmt: skip
        try:
            yield on_disk
        finally:
            subprocess.run(["chattr", "-i", str(db)], check=True)
    else:
        db.chmod(0o444)
        try:
            yield on_disk
        finally:
            db.chmod(0o644)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["article add", "edit"])
def test_cli_on_a_read_only_file_prints_one_line(read_only: dict[str, Any], command: str) -> None:
    result = run_kbes(read_only["db"], *cli_writes(read_only)[command])
    if command == "edit":
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        error = json.loads(result.stdout)
        assert (error["code"], "read-only" in error["message"]) == ("unavailable", True)
    else:
        assert_one_line(result, 1, "unavailable", "read-only")


def test_kbes_tool_prints_a_lone_surrogate_escaped(runner: CliRunner, kb: str) -> None:
    result = runner.invoke(
        main, ["tool", "read_knowledge_article", f"knowledge_base_id={kb}",
               "article_id:=\"\\ud800\""],
    )  # fmt: skip
    assert not isinstance(result.exception, UnicodeError), result.exception
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)
    assert error["code"] == "not_found"
    assert "\\ud800" in result.stdout  # JSON's escape: the text stays valid UTF-8


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a kbes database, then mounted read-only (a bind mount: needs root)."""
    folder = tmp_path / "mounted"
    folder.mkdir()
    store = open_store(folder / "kbes.sqlite")
    store.create_knowledge_base("Support")
    store.close()
    done = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only file system here: {done.stderr!r}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["kb", "list"], ["kb", "create", "Other"]])
def test_a_database_on_a_read_only_file_system_says_so(
    read_only_mount: Path, command: list[str]
) -> None:
    """Issue 35: it said "unable to open database file", which names no cause."""
    db = read_only_mount / "kbes.sqlite"
    result = run_kbes(db, *command)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert f"the file system holding it ({read_only_mount}) is read-only" in result.stderr
    assert "copy it to a writable place" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
