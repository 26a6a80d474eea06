"""`--db` takes a file path or a PostgreSQL URL, never a SQLite URI or `:memory:`: the store
opens SQLite with URIs enabled, so `file:typo.sqlite` once made a new empty database past the
"must exist" check, and `:memory:` let `kb create` report a database that vanished at exit.
Whether a file is a kbes database is asked of the tables the recorder itself writes."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest
from click.testing import CliRunner
from eventsourcing.persistence import StoredEvent

from kbes import open_store
from kbes.cli import main
from kbes.store import probe
from kbes.store.settings import Settings
from kbes.store.sqlite import (
    EVENTS_TABLE,
    FEED_KWARG,
    FEED_TABLE,
    FeedApplicationRecorder,
    KbesSQLiteDatastore,
)

REFUSED = {
    "file:typo.sqlite": "is a SQLite URI, which kbes does not take",
    "file:kb.sqlite?mode=rwc": "is a SQLite URI, which kbes does not take",
    ":memory:": "in-memory database",
    "file::memory:?cache=shared": "is a SQLite URI, which kbes does not take",
}


@pytest.mark.parametrize("db", sorted(REFUSED))
@pytest.mark.parametrize("command", [["kb", "create", "Support"], ["kb", "list"]])
@pytest.mark.parametrize("how", ["--db", "KBES_DB"])
def test_sqlite_uris_and_memory_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: str, command: list[str], how: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if how == "--db":
        result = CliRunner().invoke(main, [*command, "--db", db])
    else:
        result = CliRunner().invoke(main, command, env={"KBES_DB": db})
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert REFUSED[db] in result.stderr
    assert "--db" in result.stderr and "KBES_DB" in result.stderr
    assert "give a file path" in result.stderr
    assert "created" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_path_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["kb", "create", "Support", "--db", "kb.sqlite"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "kb.sqlite").is_file()


def test_the_probe_asks_for_the_tables_the_recorder_writes(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite"
    store = open_store(path)
    try:
        assert isinstance(store.log.recorder, FeedApplicationRecorder)
        assert store.log.recorder.events_table_name == EVENTS_TABLE
    finally:
        store.close()
    assert {EVENTS_TABLE, FEED_TABLE} <= probe.sqlite_tables(str(path))
    assert probe.require_database(Settings(db=str(path))) is True
    with pytest.raises(probe.Missing):
        probe.require_database(Settings(db=str(tmp_path / "typo.sqlite")))


def test_the_feed_reads_the_recorders_own_events_table(tmp_path: Path) -> None:
    datastore = KbesSQLiteDatastore(str(tmp_path / "other.sqlite"))
    try:
        recorder = FeedApplicationRecorder(datastore, events_table_name="other_events")
        recorder.create_table()
        kb, article = uuid4(), uuid4()
        event = StoredEvent(originator_id=article, originator_version=1, topic="t", state=b"{}")
        recorder.insert_events([event], **{FEED_KWARG: [kb.hex]})
        rows, head = recorder.select_feed_rows(kb.hex, 0, 10)
        assert head == 1
        assert rows == [(1, str(article), 1, "t", b"{}")]
    finally:
        datastore.close()
