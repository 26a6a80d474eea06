"""What the CLI tests share: run a command as a user would and keep what it printed."""

from __future__ import annotations

from click.testing import CliRunner

from kbes.cli import main


def ok(runner: CliRunner, *args: str) -> str:
    """Run `kbes ARGS...`, require success, and return its stdout (what a pipe would get)."""
    result = runner.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout
