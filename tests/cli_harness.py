"""What the CLI tests share: run a command as a user would and keep what it printed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbes.cli import main
from kbes.store.application import open_store


def ok(runner: CliRunner, *args: str) -> str:
    """Run `kbes ARGS...`, require success, and return its stdout (what a pipe would get)."""
    result = runner.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def head(db_path: Path) -> int:
    """The log's last notification id, read from its own store: a command that must write
    nothing leaves it where it was."""
    store = open_store(str(db_path))
    try:
        return store.head()
    finally:
        store.close()
