"""The search index across real processes: read-after-write between processes, one writer at a
time (a process that finds the writer held waits, and a killed holder releases it), a catch-up
killed by SIGKILL before its commit resumed without a trace, and `kbes rebuild`; on SQLite and
on PostgreSQL (where each process keeps its own views and index, named by KBES_VIEWS)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tantivy
from mcp_harness import KBES
from search_worker import HANGING

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.projections.search_index import IndexBusy

WORKER = Path(__file__).with_name("search_worker.py")


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    from pg_server import running_pg

    yield from running_pg()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "search.sqlite")
    return request.getfixturevalue("pg").create_database()  # type: ignore[no-any-return]


def views(db: str, tmp_path: Path, name: str) -> str:
    """A PostgreSQL log needs a local views file per process; SQLite keeps them in the db."""
    return str(tmp_path / f"views-{name}.sqlite") if db.startswith("postgresql") else ""


def store_of(db: str, tmp_path: Path, name: str) -> KnowledgeBaseStore:
    return open_store(db, views=views(db, tmp_path, name) or None)


def search(store: KnowledgeBaseStore, kb: str, query: str) -> list[str]:
    result = call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})
    return [hit.article_id for hit in result.hits]


def worker(db: str, views_file: str, kb: str, query: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), db, views_file, kb, query, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def worker_hits(db: str, views_file: str, kb: str, query: str) -> list[str]:
    process = worker(db, views_file, kb, query)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out)["hits"]  # type: ignore[no-any-return]


def kbes(db: str, views_file: str, *args: str) -> str:
    env = {**os.environ, "KBES_DB": db}
    if views_file:
        env["KBES_VIEWS"] = views_file
    done = subprocess.run(
        [KBES, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_save_in_one_process_is_found_by_the_next_search_in_another(
    db: str, tmp_path: Path
) -> None:
    here = store_of(db, tmp_path, "here")
    kb = str(here.create_knowledge_base("Support"))
    (article,) = here.add_articles(
        kb, [("Reset passwords", "Open the account page.")], publish=True
    )
    assert search(here, kb, "password") == [str(article)]
    # `kbes article save` in another process, then this process's next search.
    kbes(db, views(db, tmp_path, "cli"), "article", "save", str(article), "--kb", kb,
         "--content", "Zebra crossings ahead.")  # fmt: skip
    assert search(here, kb, "zebra") == [str(article)]
    # This process's save, then another process's search (on SQLite, of the shared index).
    here.save_article(kb, article, content="Yaks graze here.")
    assert worker_hits(db, views(db, tmp_path, "other"), kb, "yak") == [str(article)]
    assert search(here, kb, "zebra") == []
    here.close()


def test_a_held_writer_is_waited_for_never_raced_and_a_killed_holder_releases_it(
    db: str, tmp_path: Path
) -> None:
    name = "shared" if db.startswith("postgresql") else ""
    here = store_of(db, tmp_path, name)
    kb = str(here.create_knowledge_base("Support"))
    (article,) = here.add_articles(
        kb, [("Export invoices", "Use the download dialog.")], publish=True
    )
    holder = worker(db, views(db, tmp_path, name), kb, "invoice", "--hang-before-commit")
    try:
        assert holder.stdout is not None
        assert json.loads(holder.stdout.readline())["state"] == HANGING
        here.search_index.wait_seconds = 0.5
        with pytest.raises(IndexBusy, match="another process held its writer"):
            search(here, kb, "invoice")
    finally:
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(timeout=30) == -signal.SIGKILL
    # The OS released the lock with the process: this process catches the index up itself.
    assert search(here, kb, "invoice") == [str(article)]
    here.close()


def test_a_catch_up_killed_before_its_commit_resumes_without_a_trace(
    db: str, tmp_path: Path
) -> None:
    views_file = views(db, tmp_path, "worker")
    here = store_of(db, tmp_path, "here")
    kb = str(here.create_knowledge_base("Support"))
    gone, kept = here.add_articles(
        kb,
        [("Rotate API keys", "Keys expire yearly."), ("Share dashboards", "Pick a team.")],
        publish=True,
    )
    assert sorted(worker_hits(db, views_file, kb, "keys dashboards")) == sorted(
        [str(gone), str(kept)]
    )
    here.unpublish_article(kb, gone)
    here.save_article(kb, kept, content="Pick a team, then share the dashboards with keys.")
    killed = worker(db, views_file, kb, "keys", "--hang-before-commit")
    assert killed.stdout is not None
    assert json.loads(killed.stdout.readline())["state"] == HANGING
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL
    # Nothing of the killed catch-up is visible; the next one applies it once.
    resumed = open_store(db, views=views_file or None)
    assert resumed.search_index.position < resumed.catch_up()
    assert search(resumed, kb, "keys") == [str(kept)]
    assert resumed.search_index.position == resumed.views.position
    indexed = resumed.search_index.dump()
    assert [row[0] for row in indexed] == [str(kept)]
    assert "with keys" in indexed[0][2]
    resumed.rebuild()
    assert resumed.search_index.dump() == indexed
    resumed.close()
    here.close()


def test_kbes_rebuild_rebuilds_the_index(db: str, tmp_path: Path) -> None:
    views_file = views(db, tmp_path, "here")
    here = open_store(db, views=views_file or None)
    kb = str(here.create_knowledge_base("Support"))
    ids = here.add_articles(
        kb, [(f"Archive reports {i}", f"Archived text {i}.") for i in range(30)], publish=True
    )
    here.unpublish_article(kb, ids[0])
    before = search(here, kb, "archive reports")
    indexed = here.search_index.dump()
    here.close()
    kbes(db, views_file, "rebuild")
    again = open_store(db, views=views_file or None)
    assert again.search_index.dump() == indexed
    assert search(again, kb, "archive reports") == before
    assert str(ids[0]) not in before
    again.close()


def test_an_index_left_beside_a_new_database_is_built_again(tmp_path: Path) -> None:
    """A deleted database whose index directory stayed: the new log's positions mean other
    events, so the old index (and its articles) must not be trusted."""
    db = tmp_path / "kbes.sqlite"
    first = open_store(db)
    kb = str(first.create_knowledge_base("Old"))
    first.add_articles(kb, [(f"Old article {i}", "old text") for i in range(5)], publish=True)
    assert len(search(first, kb, "old")) == 5
    first.close()
    for path in tmp_path.glob("kbes.sqlite*"):
        if path.is_file():
            path.unlink()
    second = open_store(db)
    assert second.search_index.position == 0
    kb = str(second.create_knowledge_base("New"))
    second.add_articles(kb, [(f"New article {i}", "new text") for i in range(9)], publish=True)
    assert len(search(second, kb, "new")) == 9
    titles = sorted(row[1] for row in second.search_index.dump())
    assert titles == [f"New article {i}" for i in range(9)]
    second.close()


def test_an_index_of_another_schema_is_built_again(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    store = open_store(db)
    kb = str(store.create_knowledge_base("Support"))
    store.add_articles(kb, [("Sync tags", "Tags sync nightly.")], publish=True)
    store.close()
    old = tantivy.SchemaBuilder()
    old.add_text_field("body", stored=True)
    index_dir = tmp_path / "kbes.sqlite.search"
    shutil.rmtree(index_dir, ignore_errors=True)
    index_dir.mkdir()
    writer = tantivy.Index(old.build(), path=str(index_dir)).writer(15_000_000, 1)
    writer.commit()
    writer.wait_merging_threads()
    again = open_store(db)
    assert len(search(again, kb, "tags")) == 1
    again.close()
