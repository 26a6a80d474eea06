"""A keyword index's failures through real processes (issue 35): a damaged index under a running
`kbes serve --http` costs at most its own knowledge base's searches, a backup restored beside a
newer index is never answered from that index, a stray file a killed commit left is recovered
from across restarts, and a full disk during an index commit is `unavailable` until it passes.
The same in one process: tests/test_keyword_failures.py."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import raw_http
from mcp_harness import KBES, http_server
from test_keyword_failures import index_folder, plant_stray_deletions

from kbes import open_store

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("every_index_in_a_folder")]


def tool(db: Path, name: str, limit_bytes: int | None = None, **arguments: str) -> Any:
    """`kbes tool NAME` in its own process (a file size limit of `limit_bytes`: a full disk):
    the JSON it answers, or the error it prints."""

    def limited() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    done = subprocess.run(
        [KBES, "tool", "--db", str(db), name, *(f"{k}={v}" for k, v in arguments.items())],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited,
    )
    return json.loads(done.stdout) if done.returncode == 0 else done.stderr + done.stdout


def titles(db: Path, kb: str, query: str) -> list[tuple[str, str]]:
    found = tool(db, "search_knowledge_base", knowledge_base_id=kb, query=query)
    assert isinstance(found, dict), found
    return [(h["title"], h["updated_at"]) for h in found["hits"]]


def search_call(session: raw_http.Session, kb: str, query: str) -> dict[str, Any]:
    return session.request(
        "tools/call",
        {"name": "search_knowledge_base", "arguments": {"knowledge_base_id": kb, "query": query}},
    )


def test_a_damaged_index_costs_a_running_http_server_nothing_else(tmp_path: Path) -> None:
    """Before (robust4/panic_zombie.sh): the panic ended the SDK's session manager, and every
    later request of any client, `initialize` included, got HTTP 500 from a live process."""
    db = tmp_path / "k.sqlite"
    with closing(open_store(db)) as store:
        one = str(store.create_knowledge_base("One"))
        two = str(store.create_knowledge_base("Two"))
        for kb in (one, two):
            store.add_articles(kb, [(f"A{i}", f"word{i} text") for i in range(30)], publish=True)
    with http_server(db, "--grant-all") as server, raw_http.client() as http:
        session = raw_http.Session(http, server.url)
        assert session.open().status_code == 200
        assert search_call(session, one, "word7")["result"]["structuredContent"]["hits"]
        for f in index_folder(db, one).glob("*.store"):
            os.truncate(f, f.stat().st_size // 2)
        after = search_call(session, one, "word7")["result"]
        assert [h["title"] for h in after["structuredContent"]["hits"]] == ["A7"], after
        fresh = raw_http.Session(http, server.url)
        assert fresh.open().status_code == 200
        other = search_call(fresh, two, "word7")["result"]["structuredContent"]["hits"]
        assert [h["title"] for h in other] == ["A7"]
        assert server.process.poll() is None
    assert f"keyword index of knowledge base {one} failed" in server.log()


def test_a_restored_backup_is_never_answered_from_a_newer_index(tmp_path: Path) -> None:
    """docs/operations.md's backup, restored in place with the server stopped, beside the
    keyword index of the newer log (the same shape as a power cut under synchronous=NORMAL:
    the log lost its tail, the index kept it). Before (robust4/restore_backup.sh): search found
    an article the log never had, a citation newer than the read's, and missed articles
    published after the restore once the log passed the index's position."""
    db = tmp_path / "k.sqlite"
    with closing(open_store(db)) as store:
        kb = str(store.create_knowledge_base("R"))
        alpha = str(store.add_article(kb, "Alpha", "alphaword one", publish=True))
        read_then = store.read_article(kb, alpha).updated_at
    assert titles(db, kb, "alphaword") == [("Alpha", read_then)]
    backup = tmp_path / "backup.sqlite"
    with closing(sqlite3.connect(db)) as live, closing(sqlite3.connect(backup)) as copy:
        live.backup(copy)
    with closing(open_store(db)) as store:
        store.add_article(kb, "Bravo", "bravoword text", publish=True)
        store.save_article(kb, alpha, content="alphaword two")
    assert [t for t, _ in titles(db, kb, "bravoword")] == ["Bravo"]  # the index moved on
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(backup.read_bytes())  # the restore, servers stopped
    assert titles(db, kb, "bravoword") == []
    assert titles(db, kb, "alphaword") == [("Alpha", read_then)]
    with closing(open_store(db)) as store:
        store.add_article(kb, "Echo", "echoword new", publish=True)
        for i in range(4):
            store.add_article(kb, f"F{i}", f"filler{i}", publish=True)
    assert [t for t, _ in titles(db, kb, "echoword")] == ["Echo"]


def test_a_stray_deletions_file_is_recovered_from_across_processes(tmp_path: Path) -> None:
    """Before (robust4/stray_del_file.sh): every search that had to commit failed with
    internal_error (a traceback from `kbes tool`), in every later process, until a rebuild."""
    db = tmp_path / "k.sqlite"
    with closing(open_store(db)) as store:
        kb = str(store.create_knowledge_base("Del"))
        alpha = str(store.add_article(kb, "Alpha", "alphaword first", publish=True))
        store.add_articles(kb, [(f"F{i}", f"filler{i} text") for i in range(40)], publish=True)
    assert [t for t, _ in titles(db, kb, "alphaword")] == ["Alpha"]
    with closing(open_store(db)) as store:
        store.save_article(kb, alpha, content="alphaword second")
    plant_stray_deletions(index_folder(db, kb))
    for _ in range(2):  # the recovery holds in the next process too
        found = tool(db, "search_knowledge_base", knowledge_base_id=kb, query="alphaword")
        assert isinstance(found, dict), found
        assert [h["snippet"] for h in found["hits"]] == ["alphaword second"]


def test_a_full_disk_during_an_index_commit_is_unavailable_until_it_passes(
    tmp_path: Path,
) -> None:
    """A file size limit (RLIMIT_FSIZE: EFBIG, as ENOSPC a write the disk refuses) under the
    commit of many changes. Before: internal_error."""
    db = tmp_path / "k.sqlite"
    with closing(open_store(db)) as store:
        kb = str(store.create_knowledge_base("Full"))
        ids = store.add_articles(kb, [(f"A{i}", f"word{i}") for i in range(50)], publish=True)
    assert len(titles(db, kb, "word7")) == 1
    with closing(open_store(db)) as store:
        for n, article in enumerate(ids):
            noise = " ".join(os.urandom(6).hex() for _ in range(1500))  # incompressible
            store.save_article(kb, article, content=f"changedword {n} {noise}")
        store.catch_up()  # the views take their writes now, before the limit
    refused = tool(db, "search_knowledge_base", 64_000, knowledge_base_id=kb, query="changedword")
    assert isinstance(refused, str), refused
    assert "unavailable" in refused and kb in refused and "file too large" in refused, refused
    assert len(titles(db, kb, "changedword")) == 10  # the default limit
