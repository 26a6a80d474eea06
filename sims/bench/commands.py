"""Real `kbes` commands run in a process of their own, timed from outside as a user waits."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def kbes_command() -> list[str]:
    """The installed `kbes` console script (the real command a user runs)."""
    script = Path(sys.executable).with_name("kbes")
    if script.exists():
        return [str(script)]
    found = shutil.which("kbes")
    if found:
        return [found]
    return [sys.executable, "-c", "from kbes.cli import main; main()"]


_MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - start
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)
"""


def run_measured(args: Sequence[str]) -> tuple[float, float, int]:
    """Run a command; return its wall time (s), its peak resident memory (MB) and exit code.

    It runs under a small Python process of its own: Linux's peak RSS of a child includes
    the RSS of whatever forked it (at exec the old address space's high-water mark is kept),
    so forked straight from the bench it would report the bench's own peak. The figure
    still holds the small parent's own footprint, the same for every command measured."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2])
