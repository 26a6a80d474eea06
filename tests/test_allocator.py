"""The kbes command sets glibc's allocator (cli/allocator.py) before every command, and each
setting the user made in the environment is left to glibc."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kbes.cli.allocator import SETTINGS, tune_allocator

GLIBC = platform.system() == "Linux" and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith(
    "glibc"
)
NAMES = [name for name, _, _ in SETTINGS]

COMMITS = """
import resource, statistics, sys
import tantivy
from kbes.cli.allocator import tune_allocator
from kbes.projections import keyword_schema as K

if sys.argv[1] == "tuned":
    tune_allocator({})
index = K.register(tantivy.Index(K.SCHEMA))
faulted = []
for n in range(40):
    writer = index.writer(15_000_000, 1)
    writer.add_document(K.document(f"a{n}", "Reset passwords", "Open the page. " * 40, "t", n))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    writer.commit()
    faulted.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    writer.wait_merging_threads()
print(statistics.median(faulted[5:]))
"""


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_every_setting_is_made_on_glibc() -> None:
    assert tune_allocator({}) == NAMES


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_a_setting_in_the_environment_is_left_alone() -> None:
    assert tune_allocator({"MALLOC_ARENA_MAX": "8"}) == NAMES[1:]
    assert tune_allocator(dict.fromkeys(NAMES, "1")) == []


@pytest.mark.slow
@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_a_tuned_commit_reuses_memory_instead_of_faulting_in_fresh() -> None:
    """The reason for the thresholds: glibc's defaults fault in a commit's buffers afresh."""

    def median_faults(mode: str) -> float:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        out = subprocess.run(
            [sys.executable, "-c", COMMITS, mode], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return float(out.stdout)

    untuned, tuned = median_faults("default"), median_faults("tuned")
    assert untuned > 200, f"glibc's defaults faulted only {untuned} pages a commit"
    assert tuned < 20, f"tuned, a commit still faulted {tuned} pages"


def test_the_command_line_runs_with_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbes.cli

    calls: list[list[str]] = []

    def spy(environ: dict[str, str] | None = None) -> list[str]:
        calls.append(tune_allocator({} if environ is None else environ))
        return calls[-1]

    monkeypatch.setattr(kbes.cli, "tune_allocator", spy)
    result = CliRunner().invoke(kbes.cli.main, ["kb", "--help"])
    assert result.exit_code == 0, result.output
    assert calls == [NAMES if GLIBC else []]
