"""The keyword engine across real processes, on SQLite and PostgreSQL: read-after-write from
one process to another, a catch-up killed by SIGKILL before its commit resumed with nothing
applied twice and no unpublished article findable, and `kbes rebuild`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from keyword_worker import HANGING
from mcp_harness import KBES

from kbes import KnowledgeBaseStore, call_tool, open_store

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("every_index_in_a_folder")]
WORKER = Path(__file__).with_name("keyword_worker.py")


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    from pg_server import running_pg

    yield from running_pg()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "search.sqlite")
    return request.getfixturevalue("pg").create_database()


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
    return json.loads(out)["hits"]


def kbes(db: str, views_file: str, *args: str) -> str:
    env = {**os.environ, "KBES_DB": db}
    if views_file:
        env["KBES_VIEWS"] = views_file
    done = subprocess.run(
        [KBES, *args], capture_output=True, text=True, env=env, timeout=120, check=False
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
    kbes(db, views(db, tmp_path, "cli"), "article", "save", str(article), "--kb", kb,
         "--content", "Zebra crossings ahead.")  # fmt: skip
    assert search(here, kb, "zebra") == [str(article)]
    here.save_article(kb, article, content="Yaks graze here. 退款需要五天。")
    assert worker_hits(db, views(db, tmp_path, "other"), kb, "yak") == [str(article)]
    assert worker_hits(db, views(db, tmp_path, "other"), kb, "退款") == [str(article)]
    assert search(here, kb, "zebra") == []
    here.close()


def test_a_catch_up_killed_before_its_commit_resumes_cleanly(db: str, tmp_path: Path) -> None:
    name = "shared" if db.startswith("postgresql") else ""
    here = store_of(db, tmp_path, name)
    kb = str(here.create_knowledge_base("Support"))
    kept, gone = here.add_articles(
        kb,
        [("Export invoices", "Use the download dialog."), ("Old invoices", "Archived.")],
        publish=True,
    )
    assert sorted(search(here, kb, "invoice")) == sorted([str(kept), str(gone)])
    here.unpublish_article(kb, gone)
    here.save_article(kb, kept, content="Use the download dialog, then invoices again.")
    holder = worker(db, views(db, tmp_path, name), kb, "invoice", "--hang-before-commit")
    try:
        assert holder.stdout is not None
        line = json.loads(holder.stdout.readline())
        assert line["state"] == HANGING
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # The killed catch-up left nothing: the next search (another process) applies it once.
    assert worker_hits(db, views(db, tmp_path, name), kb, "invoice") == [str(kept)]
    assert search(here, kb, "archived") == []
    assert search(here, kb, "again") == [str(kept)]
    here.close()


def test_kbes_rebuild_keeps_the_keyword_index_right(db: str, tmp_path: Path) -> None:
    name = "r" if db.startswith("postgresql") else ""
    here = store_of(db, tmp_path, name)
    kb = str(here.create_knowledge_base("Support"))
    one, two = here.add_articles(
        kb, [("東京", "返金は五日"), ("Billing", "Invoices.")], publish=True
    )
    assert search(here, kb, "東京") == [str(one)]
    here.unpublish_article(kb, two)
    here.close()
    kbes(db, views(db, tmp_path, name), "rebuild")
    here = store_of(db, tmp_path, name)
    assert search(here, kb, "東京") == [str(one)]
    assert search(here, kb, "invoices") == []
    here.close()
