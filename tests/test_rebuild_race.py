"""Read-after-write through `kbes rebuild` (issue 35, item 6), with real processes: one process
runs `kbes rebuild` again and again while an agent saves through one `kbes serve` and, at each
acknowledged save, searches for it through that server and through another one. Each search
finds the save's new word in exactly the saved article, and its old word nowhere, however the
rebuilds' switches of the views fall between them. On SQLite, and on PostgreSQL with every
process sharing one views file (as processes on one machine may), where a rebuild switches the
views the servers answer from."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_wire import Server

from kbes import open_store

pytestmark = pytest.mark.slow

ARTICLES = 3
FILLER = 20
"""Other articles: a log for each rebuild to replay and an index to build, small enough that
the rebuilds switch the views many times a second."""
SAVES = {"sqlite": 200, "postgresql": 600}
"""Saves, each searched for through both servers. Before 7f69336 (the views' id read in one
snapshot with the changes) each of two runs of 600 saves on PostgreSQL failed: 3 and 1 of their
2,400 searches found the save's new word in no article (the writer's own search, at saves 130
and 451); 600 saves on SQLite missed none, during 3,074 rebuilds."""
REBUILDS_AT_LEAST = 10

REBUILD_LOOP = """
import sys
from pathlib import Path
from kbes.cli import main
stop = Path(sys.argv[1])
while not stop.exists():
    main(["rebuild"], standalone_mode=False)
    print("rebuilt", flush=True)
"""
"""`kbes rebuild`, run again and again in one process until the stop file exists."""


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    from pg_server import running_pg

    yield from running_pg()


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment every process of the test shares."""
    if request.param == "sqlite":
        return {"KBES_DB": str(tmp_path / "race.sqlite")}
    db = request.getfixturevalue("pg").create_database()
    return {"KBES_DB": db, "KBES_VIEWS": str(tmp_path / "views.sqlite")}


def saves(env: dict[str, str]) -> int:
    return SAVES["postgresql" if env["KBES_DB"].startswith("postgresql") else "sqlite"]


def word(save: int) -> str:
    """The one word of a save's content (a first content's, for a negative `save`)."""
    return f"racew{save}x" if save >= 0 else f"racefirst{-save}x"


def hits(server: Server, kb: str, query: str) -> list[str]:
    answer = server.tool("search_knowledge_base", {"knowledge_base_id": kb, "query": query})
    assert not answer.is_error, answer.body
    return [hit["article_id"] for hit in answer.body["hits"]]


def test_every_acknowledged_save_is_found_while_rebuilds_switch_views(
    env: dict[str, str], tmp_path: Path
) -> None:
    store = open_store(env["KBES_DB"], views=env.get("KBES_VIEWS"))
    try:
        kb = str(store.create_knowledge_base("Race"))
        store.add_articles(
            kb, [(f"Filler {i}", f"Other text number {i}.") for i in range(FILLER)], publish=True
        )
        ids = [
            str(a)
            for a in store.add_articles(
                kb, [(f"Target {j}", f"{word(-1 - j)} at first.") for j in range(ARTICLES)],
                publish=True,
            )
        ]  # fmt: skip
        versions = {a: store.read_article(kb, a).updated_at for a in ids}
    finally:
        store.close()

    writer = Server(env, "stdio", tmp_path / "writer.log")
    reader = Server(env, "stdio", tmp_path / "reader.log")
    stop = tmp_path / "stop"
    # Each rebuild draws its progress bar on stderr: into a file, which never fills as an
    # unread pipe would (and blocks the loop) after some thousands of rebuilds.
    errors = tmp_path / "rebuild.err"
    with errors.open("w") as stderr:
        rebuilder = subprocess.Popen(
            [sys.executable, "-c", REBUILD_LOOP, str(stop)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, **env},
        )
    rebuilt: list[str] = []

    def count() -> None:
        """Each rebuild also prints its own summary line: count the loop's."""
        rebuilt.extend(line for line in rebuilder.stdout or () if line == "rebuilt\n")

    counting = threading.Thread(target=count, daemon=True)
    counting.start()
    misses: list[str] = []
    try:
        writer.open()
        reader.open()
        old = {a: word(-1 - j) for j, a in enumerate(ids)}
        save = 0
        while save < saves(env) or len(rebuilt) < REBUILDS_AT_LEAST:
            assert rebuilder.poll() is None, errors.read_text()
            article = ids[save % ARTICLES]
            answer = writer.tool(
                "edit_knowledge_article",
                {
                    "knowledge_base_id": kb,
                    "article_id": article,
                    "content": f"{word(save)} now.",
                    "expected_version": versions[article],
                    "idempotency_key": f"race-{save}",
                },
            )
            assert not answer.is_error, answer.body
            versions[article] = answer.body["updated_at"]
            for name, server in (("writer", writer), ("reader", reader)):
                found, gone = hits(server, kb, word(save)), hits(server, kb, old[article])
                if (found, gone) != ([article], []):
                    misses.append(f"save {save} ({len(rebuilt)} rebuilt): {name} {found} {gone}")
            old[article] = word(save)
            save += 1
        print(f"{save} saves, {4 * save} searches, {len(rebuilt)} rebuilds")  # shown with -s
    finally:
        stop.touch()
        try:
            rebuilder.wait(timeout=300)
        finally:
            writer.close()
            reader.close()
    assert rebuilder.returncode == 0, errors.read_text()
    counting.join(timeout=30)
    assert misses == []
    assert len(rebuilt) >= REBUILDS_AT_LEAST
