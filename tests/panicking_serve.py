"""`kbes` with one test-only fault: while the file named by PANIC_FLAG exists, every catch-up
(every search, read, resource read) and every knowledge-base check (every prompt) raises
`PanicException`, a `BaseException` as pyo3 raises a Rust panic (tantivy's). Run as
`python panicking_serve.py serve ...` by tests/test_contained_failures.py; the product code
holds no such hook."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbes.cli import main
from kbes.store.application import KnowledgeBaseStore
from kbes.store.queries import Queries


class PanicException(BaseException):
    """Shaped as pyo3's: not an `Exception`."""


PANICKING = ((Queries, "catch_up"), (KnowledgeBaseStore, "require_knowledge_base"))
"""The methods that panic: between them, every search, read, resource read, prompt."""


def install(flag: Path) -> None:
    for owner, name in PANICKING:
        original = getattr(owner, name)
        setattr(owner, name, panicking(original, flag))


def panicking(original: Callable[..., Any], flag: Path) -> Callable[..., Any]:
    def method(*args: Any, **kwargs: Any) -> Any:
        if flag.exists():
            raise PanicException("index/segment_reader.rs: called `Option::unwrap()` on None")
        return original(*args, **kwargs)

    return method


if __name__ == "__main__":
    install(Path(os.environ["PANIC_FLAG"]))
    sys.argv[0] = "kbes"
    main()
