"""A large `kbes import` into PostgreSQL finishes, and leaves the events table unlocked.

Written through psycopg's pipeline, an import of 3,000 files of about 5 KB each (16 MB of
events in one transaction) waited for ever: psycopg stopped flushing before the server had the
whole INSERT, so the server waited for the rest (`ClientRead`) holding the table's EXCLUSIVE
lock while the client waited for the answer (psycopg/psycopg#685). kbes now writes a large
import in batches of at most `Settings.write_batch_chars` characters, each its own transaction,
through eventsourcing's own write (docs/operations.md says why).

Real `kbes import` processes against the real server the suite starts (tests/pg_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

import psycopg
from pg_server import PgServer, running_pg

pytestmark = pytest.mark.slow

FILES = 3_000
IMPORTS = 10
LIMIT = 300
"""Seconds one import may take on a busy shared machine (a quiet one takes about 10; one
hung by the pipeline never finishes)."""
KBES = [sys.executable, "-c", "from kbes.cli import main; main()"]


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


def kbes(*args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KBES, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_ten_large_imports_in_a_row_finish_and_release_the_lock(
    pg: PgServer, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    filler = "Refunds are paid back to the card that paid. " * 115
    for i in range(FILES):
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{filler}Case {i}.\n")
    url = pg.create_database()
    env = {**os.environ, "KBES_VIEWS": str(tmp_path / "views.sqlite")}
    for run in range(IMPORTS):
        made = kbes("kb", "create", f"Import {run}", "--db", url, env=env, timeout=60)
        assert made.returncode == 0, made.stderr
        kb = made.stdout.split()[0]
        try:
            done = kbes(
                "import", str(folder), "--kb", kb, "--publish", "--db", url, env=env, timeout=LIMIT
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"import {run + 1} of {IMPORTS} did not finish within {LIMIT} s")
        assert done.returncode == 0, done.stderr
        assert (
            done.stdout.splitlines()[-1]
            == f"{FILES} added, 0 saved, {FILES} published, 0 unchanged"
        )
        with psycopg.connect(url) as conn:
            # The lock is free: another writer gets it at once.
            conn.execute("SET lock_timeout = '1s'")
            conn.execute("LOCK TABLE kbes_events IN EXCLUSIVE MODE")
            published = conn.execute(
                "SELECT count(*) FROM kb_feed WHERE knowledge_base_id = %s", (kb,)
            ).fetchone()
        assert published == (FILES,)


def test_an_import_that_fails_part_way_says_what_it_wrote(pg: PgServer, tmp_path: Path) -> None:
    """The server refuses the second batch (a trigger, as a full disk or a dropped connection
    would): the command prints the first batch's lines, says how much it wrote and exits 1;
    importing the folder again writes the rest, and nothing twice."""
    folder = tmp_path / "docs"
    folder.mkdir()
    filler = "Refunds are paid back to the card that paid. " * 115
    files = 600
    for i in range(files):
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{filler}Case {i}.\n")
    url = pg.create_database()
    env = {**os.environ, "KBES_VIEWS": str(tmp_path / "views.sqlite")}
    made = kbes("kb", "create", "Part way", "--db", url, env=env, timeout=60)
    kb = made.stdout.split()[0]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse_second_batch() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF (SELECT count(*) FROM kbes_events) > 100 THEN "
            "RAISE EXCEPTION 'the disk is full'; END IF; RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON kbes_events "
            "FOR EACH STATEMENT EXECUTE FUNCTION refuse_second_batch()"
        )
    failed = kbes(
        "import", str(folder), "--kb", kb, "--publish", "--db", url, env=env, timeout=LIMIT
    )
    assert failed.returncode == 1, failed.stderr
    assert failed.stdout, failed.stderr
    added = [line for line in failed.stdout.splitlines() if line.startswith("added ")]
    first = len(added)
    assert 0 < first < files
    assert (
        failed.stdout.splitlines()[-1] == f"{first} added, 0 saved, {first} published, 0 unchanged"
    )
    assert f"the import wrote {first:,} of {files:,} files before it failed" in failed.stderr
    assert "the disk is full" in failed.stderr
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER refuse ON kbes_events")
    again = kbes(
        "import", str(folder), "--kb", kb, "--publish", "--db", url, env=env, timeout=LIMIT
    )
    assert again.returncode == 0, again.stderr
    rest = files - first
    assert again.stdout.splitlines()[-1] == (
        f"{rest} added, 0 saved, {rest} published, {first} unchanged"
    )
    with psycopg.connect(url) as conn:
        feed = conn.execute(
            "SELECT count(*) FROM kb_feed WHERE knowledge_base_id = %s", (kb,)
        ).fetchone()
    assert feed == (files,)
