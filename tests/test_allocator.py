"""The kbes command caps glibc's malloc arenas (cli/allocator.py), unless the user set
MALLOC_ARENA_MAX, and `kbes` runs the cap before every command."""

from __future__ import annotations

import os
import platform

import pytest
from click.testing import CliRunner

from kbes.cli.allocator import limit_arenas

GLIBC = platform.system() == "Linux" and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith(
    "glibc"
)


@pytest.mark.skipif(not GLIBC, reason="the arena cap is a glibc setting")
def test_the_cap_is_set_on_glibc() -> None:
    assert limit_arenas({}) is True


def test_an_explicit_setting_is_left_alone() -> None:
    assert limit_arenas({"MALLOC_ARENA_MAX": "8"}) is False


def test_the_command_line_runs_with_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbes.cli

    calls: list[bool] = []

    def spy(environ: dict[str, str] | None = None) -> bool:
        calls.append(limit_arenas({} if environ is None else environ))
        return calls[-1]

    monkeypatch.setattr(kbes.cli, "limit_arenas", spy)
    result = CliRunner().invoke(kbes.cli.main, ["kb", "--help"])
    assert result.exit_code == 0, result.output
    assert calls == [GLIBC]
