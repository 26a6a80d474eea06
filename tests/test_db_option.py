"""`--db` takes a file path or a PostgreSQL URL, never a SQLite URI or `:memory:`: the store
opens SQLite with URIs enabled, so `file:typo.sqlite` once made a new empty database past the
"must exist" check, and `:memory:` let `kb create` report a database that vanished at exit."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbes.cli import main

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
