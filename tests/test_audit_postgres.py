"""`kbes audit` and `kbes log export` with the log in PostgreSQL.

The history is tests/test_audit.py's (built by its `build`, with a simulated clock) written to a
real throwaway PostgreSQL database (tests/pg_server.py), and that module's tests run here again
against it: the imports below make pytest collect them in this module, where `world` is the
PostgreSQL one. Then the reports, tables and exports of the same history in PostgreSQL and in
a SQLite file are compared whole, ids aside.

The CLI runs in this process through click's CliRunner, with `KBES_VIEWS` pointing at a views
file of the test's own, as a `kbes` process on another machine would be configured."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

import psycopg
from pg_server import PgServer, running_pg
from test_audit import (  # noqa: F401  (collected here, run against this module's `world`)
    World,
    build,
    run,
    test_as_of_before_the_changes_reports_them_current,
    test_as_of_before_the_citation_was_given_says_not_yet_not_invalid,
    test_as_of_between_changes_replays_only_that_far,
    test_bad_input_is_a_clear_error,
    test_citations_from_stdin,
    test_every_classification_field,
    test_fail_on_sets_the_exit_code,
    test_log_export_gives_output_identical_to_the_database,
    test_one_microsecond_off_is_invalid_not_changed,
    test_table_summary_and_diff_on_the_terminal,
)

UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


@pytest.fixture(scope="module")
def world(pg: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """tests/test_audit.py's history in a PostgreSQL database; every `kbes` command run in this
    module keeps its views in a views file of its own (`KBES_VIEWS`), not the user's cache."""
    folder = tmp_path_factory.mktemp("audit-postgres")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBES_VIEWS", str(folder / "views-cli.sqlite"))
        yield build(folder, pg.create_database(), views=folder / "views-build.sqlite")


@pytest.fixture(scope="module")
def sqlite_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The same history in a SQLite file."""
    return build(tmp_path_factory.mktemp("audit-sqlite"))


def anonymised(text: str) -> str:
    """`text` with each distinct UUID replaced by its order of first appearance, so two runs of
    the same history (whose ids are random) compare equal."""
    numbers: dict[str, int] = {}
    return UUID_PATTERN.sub(lambda m: f"<id{numbers.setdefault(m.group(), len(numbers))}>", text)


def test_the_scenario_really_is_in_postgresql(world: World) -> None:
    assert world.db.startswith("postgresql://")
    exported = run("log", "export", "--db", world.db)
    assert exported.exit_code == 0, exported.output
    events = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {e["knowledge_base_id"] for e in events if e["type"] == "saved"} == {world.kb}
    assert sum(e["type"] == "unpublished" for e in events) == 3


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--json"],
        ["--diff"],
        ["--as-of", "2026-11-30T09:30:00Z", "--json"],
        ["--as-of", "2026-11-30T10:55:00Z", "--json"],
        ["--fail-on", "changed,gone"],
    ],
)
def test_postgresql_and_sqlite_audit_the_same_history_alike(
    world: World, sqlite_world: World, extra: list[str]
) -> None:
    on_pg = run("audit", str(world.citations), "--db", world.db, *extra)
    on_sqlite = run("audit", str(sqlite_world.citations), "--db", sqlite_world.db, *extra)
    assert on_pg.exit_code == on_sqlite.exit_code
    assert on_pg.stderr == on_sqlite.stderr
    assert "14 citations" in on_pg.stdout or '"total": 14' in on_pg.stdout
    assert anonymised(on_pg.stdout) == anonymised(on_sqlite.stdout)


def test_postgresql_and_sqlite_export_the_same_log(world: World, sqlite_world: World) -> None:
    on_pg = run("log", "export", "--db", world.db)
    on_sqlite = run("log", "export", "--db", sqlite_world.db)
    assert on_pg.exit_code == on_sqlite.exit_code == 0
    assert len(on_pg.stdout.splitlines()) > 20
    assert anonymised(on_pg.stdout) == anonymised(on_sqlite.stdout)
    # One knowledge base's events, and an increment after a sequence, filter alike.
    for args in (["--kb", world.kb], ["--after", "10"]):
        kb_args = ["--kb", sqlite_world.kb] if args[0] == "--kb" else args
        pg_part = run("log", "export", "--db", world.db, *args)
        sqlite_part = run("log", "export", "--db", sqlite_world.db, *kb_args)
        assert pg_part.exit_code == sqlite_part.exit_code == 0
        assert 0 < len(pg_part.stdout.splitlines()) < len(on_pg.stdout.splitlines())
        assert anonymised(pg_part.stdout) == anonymised(sqlite_part.stdout)


def test_audit_of_a_log_exported_in_pieces(world: World, tmp_path: Path) -> None:
    """A full export up to sequence 12 followed by `--after 12` audits like the database."""
    full = run("log", "export", "--db", world.db).stdout.splitlines(keepends=True)
    head = "".join(line for line in full if json.loads(line)["sequence"] <= 12)
    tail = run("log", "export", "--db", world.db, "--after", "12")
    assert tail.exit_code == 0
    events = tmp_path / "events.jsonl"
    events.write_text(head + tail.stdout)
    from_log = run("audit", str(world.citations), "--log", str(events), "--json")
    from_db = run("audit", str(world.citations), "--db", world.db, "--json")
    assert from_log.exit_code == from_db.exit_code == 0
    assert json.loads(from_log.stdout) == json.loads(from_db.stdout)


def pg_tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return [row[0] for row in rows]


@pytest.mark.parametrize("command", [["audit", "CITATIONS"], ["log", "export"]])
def test_a_database_without_a_kbes_log_is_refused_and_left_alone(
    world: World, pg: PgServer, command: list[str]
) -> None:
    """The PostgreSQL side of test_audit.py's missing-file refusal: an existing database that
    holds no kbes log (a mistyped name of another database) is not given kbes's tables."""
    empty = pg.create_database()
    args = [str(world.citations) if arg == "CITATIONS" else arg for arg in command]
    result = run(*args, "--db", empty)
    assert result.exit_code == 2
    assert "no kbes log in database" in result.stderr
    assert "it has no table public.kbes_events" in result.stderr
    assert "pass --db (or set KBES_DB)" in result.stderr
    assert ":postgres@" not in result.stderr  # the password is not echoed
    assert result.stdout == ""
    assert pg_tables(empty) == []


@pytest.mark.parametrize("command", [["audit", "CITATIONS"], ["log", "export"]])
def test_a_database_that_does_not_exist_is_refused_at_once(
    world: World, command: list[str]
) -> None:
    missing = world.db.rsplit("/", 1)[0] + "/kbes_no_such_database"
    args = [str(world.citations) if arg == "CITATIONS" else arg for arg in command]
    started = time.monotonic()
    result = run(*args, "--db", missing)
    assert result.exit_code == 2
    assert time.monotonic() - started < 10  # not the store's pool retrying for 30 s
    assert "cannot open database 'postgresql://postgres:***@" in result.stderr
    assert '"kbes_no_such_database" does not exist' in result.stderr
    assert result.stdout == ""
