"""Fewer malloc arenas for the kbes process (glibc only).

Each tantivy writer indexes on threads of its own, and glibc gives each new thread an
allocator arena (up to eight per core) that keeps what it freed: building forty small keyword
indexes in one process left 200 MB resident where two arenas leave 70 MB, and `kbes rebuild`
of bench row 6 peaked at 335 MB instead of 231-255 MB (docs/operations.md). An explicit
`MALLOC_ARENA_MAX` in the environment is the user's choice and is left alone."""

from __future__ import annotations

import ctypes
import os
import platform

ARENAS = 2
M_ARENA_MAX = -8
"""glibc's mallopt parameter number (malloc.h)."""


def limit_arenas(environ: dict[str, str] | None = None) -> bool:
    """Cap glibc's arenas at `ARENAS` for this process and its forks; True if it did."""
    env = os.environ if environ is None else environ
    if "MALLOC_ARENA_MAX" in env or platform.system() != "Linux":
        return False
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return False
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_ARENA_MAX, ARENAS))
    except (OSError, AttributeError, ValueError):
        return False
