"""What a `kbes serve` process holds, read from outside as an operator would (Linux /proc):
threads, memory maps, open files, resident memory and CPU time. The server is the bench's
child that the MCP client started."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Holdings:
    threads: int
    maps: int
    open_files: int
    rss_mb: float
    cpu_seconds: float
    thread_names: tuple[str, ...] = ()


def server_pid() -> int:
    """The pid of this process's child running `kbes serve`."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The command's name is in parentheses and may hold spaces: the fields follow it.
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == me and b"serve" in cmdline:
            return int(entry.name)
    raise RuntimeError("no `kbes serve` child process found")


def holdings(pid: int) -> Holdings:
    proc = Path(f"/proc/{pid}")
    status = dict(
        line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line
    )
    fields = (proc / "stat").read_text().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return Holdings(
        threads=int(status["Threads"].strip()),
        maps=sum(1 for _ in (proc / "maps").open()),
        open_files=len(os.listdir(proc / "fd")),
        rss_mb=int(status["VmRSS"].split()[0]) / 1024,
        # utime and stime: the 12th and 13th fields after the command's name.
        cpu_seconds=(int(fields[11]) + int(fields[12])) / ticks,
        thread_names=tuple(sorted(_names(proc))),
    )


def _names(proc: Path) -> list[str]:
    names = []
    for task in (proc / "task").iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:
            continue  # ended meanwhile
    return names


__all__ = ["Holdings", "holdings", "server_pid"]
