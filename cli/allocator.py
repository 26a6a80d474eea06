"""glibc's allocator, set for what a kbes process does (glibc only).

Each tantivy writer indexes on threads of its own, and glibc gives each new thread an
allocator arena (up to eight per core) that keeps what it freed: building forty small keyword
indexes in one process left 200 MB resident where two arenas leave 70 MB. And each keyword
commit allocates, and frees, a few buffers of megabytes (the writer's term table is sized from
its budget, whatever the commit holds): glibc hands blocks that large to the kernel and back,
so every commit paid page faults for fresh zeroed memory, more than half of a one-save
commit's time. Kept in the arena up to `KEEP_BELOW`, they are reused (docs/operations.md,
"Memory"). A setting the user made in the environment is theirs and is left alone."""

from __future__ import annotations

import ctypes
import os
import platform

ARENAS = 2
KEEP_BELOW = 32 * 1024 * 1024
"""Blocks up to this size come from the arenas, and the arenas keep this much free memory at
their top before they hand it back (glibc's largest mmap threshold on 64-bit)."""

SETTINGS = (
    # glibc's environment variable, mallopt's parameter number (malloc.h), the value.
    ("MALLOC_ARENA_MAX", -8, ARENAS),
    ("MALLOC_MMAP_THRESHOLD_", -3, KEEP_BELOW),
    ("MALLOC_TRIM_THRESHOLD_", -1, KEEP_BELOW),
)


def tune_allocator(environ: dict[str, str] | None = None) -> list[str]:
    """Set glibc's allocator for this process and its forks; the variables it set in effect."""
    env = os.environ if environ is None else environ
    if platform.system() != "Linux":
        return []
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return []
        libc = ctypes.CDLL(None)
    except (OSError, AttributeError, ValueError):
        return []
    return [
        name
        for name, parameter, value in SETTINGS
        if name not in env and libc.mallopt(parameter, value) == 1
    ]
