"""What a failure of a keyword index means: its files are damaged (rebuild the index from the
views), or the machine cannot give it what it needs now (a full disk, an unwritable folder, no
threads or memory left: answer `unavailable` until that passes). Either way it is one knowledge
base's index that failed, never the process.

tantivy reports both kinds as a ValueError or OSError whose text holds the OS error number,
and a Rust panic (corrupted data, a thread that could not start) as pyo3's `PanicException`,
which derives from BaseException: a caller that catches Exception lets it end the server's
task groups (issue 35)."""

from __future__ import annotations

import errno
import os
import re
from typing import NamedTuple

PASSING = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EIO,
        errno.EMFILE,
        errno.ENFILE,
        errno.ENOMEM,
        errno.EAGAIN,
    }
)
"""OS errors of the machine's state, not of the index's files: rebuilding cannot help."""
_OS_ERROR = re.compile(r"os error (\d+)")
_EXHAUSTED = ("spawn", "thread", "Cannot allocate memory", "memory map")
"""Words of a panic that ran out of threads or maps rather than met bad data."""


class Failure(NamedTuple):
    """Why an index failed, in a few words, and whether its files are to blame."""

    reason: str
    damaged: bool


def is_panic(error: BaseException) -> bool:
    """pyo3's PanicException (a Rust panic inside tantivy), which no module exports by name."""
    return type(error).__name__ == "PanicException"


def classify(error: BaseException) -> Failure | None:
    """The failure `error` is, if it is a keyword index's; None for anything else (a bug of
    kbes, an interrupt), which stays what it is."""
    if is_panic(error):
        text = str(error)
        if any(word in text for word in _EXHAUSTED):
            return Failure(f"the process ran out of resources ({text})", damaged=False)
        return Failure(f"its files are damaged ({text})", damaged=True)
    if not isinstance(error, ValueError | OSError):
        return None
    number = error.errno if isinstance(error, OSError) else None
    if number is None:
        found = _OS_ERROR.search(str(error))
        number = int(found.group(1)) if found else None
    if number in PASSING:
        return Failure(os.strerror(number).lower(), damaged=False)
    return Failure(f"its files are damaged or missing ({error})", damaged=True)


__all__ = ["PASSING", "Failure", "classify", "is_panic"]
