"""Passwords never reach what kbes prints."""

from __future__ import annotations

from click.testing import CliRunner

from kbes.cli import main
from kbes.store.urls import redact


def test_redact() -> None:
    assert (
        redact("postgresql://kb:s3cret@db.local:5432/kb") == "postgresql://kb:***@db.local:5432/kb"
    )
    assert redact("postgresql://kb@db.local/kb") == "postgresql://kb@db.local/kb"
    assert redact("./kbes.sqlite") == "./kbes.sqlite"
    # A URL missing its colon or a slash is still masked, the whole password up to the last @.
    assert redact("postgresql//kb:pa/ss@h/db") == "postgresql//kb:***@h/db"
    assert redact("postgres:kb:p:ss@h/db") == "postgres:kb:***@h/db"
    # File paths with a colon and an @ are paths, left alone.
    assert redact("/data/run:2024@nightly/kb.sqlite") == "/data/run:2024@nightly/kb.sqlite"


def test_unreachable_database_error_hides_the_password() -> None:
    url = "postgresql://kb:s3cret@127.0.0.1:9/kb?connect_timeout=1"
    for command in (["kb", "list"], ["kb", "create", "Support"]):
        result = CliRunner().invoke(main, [*command, "--db", url])
        assert result.exit_code == 2, command  # the database is unusable: a usage error
        assert "s3cret" not in result.output
        assert "cannot open database 'postgresql://kb:***@127.0.0.1:9/kb" in result.output
