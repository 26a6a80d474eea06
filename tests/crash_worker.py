"""A process for the crash tests to kill: it edits an article in a loop, printing each
acknowledged edit, or runs one `kbes` command; with `--hang-at N` it stops inside the write
transaction of its Nth write (after the rows are inserted, before the commit), says so, and
waits to be killed.

    python crash_worker.py edits DB VIEWS KB ARTICLE [--hang-at N]
    python crash_worker.py kbes [--hang-at N | --hang-in-views WHERE] -- ARGS...

`--hang-in-views building` stops inside a rebuild's transaction that folds a batch into the
views built aside, after its rows are written, before its tracking position commits;
`--hang-in-views switching` stops inside the transaction that switches the views built aside
in, just after the old views are dropped and the new ones renamed in their place.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kbes import call_tool, open_store
from kbes.store.sqlite import FeedApplicationRecorder
from kbes.tools.codes import VersionConflict

HANGING = "hanging inside the write transaction"


def say(**line: Any) -> None:
    print(json.dumps(line), flush=True)


def hang_at(n: int) -> None:
    """Make the Nth write (from 0) stop after inserting its rows, before its commit."""
    recorders: list[type[Any]] = [FeedApplicationRecorder]
    try:
        from kbes.store.postgres import PostgresFeedRecorder
    except ImportError:  # psycopg is optional
        pass
    else:
        recorders.append(PostgresFeedRecorder)
    writes = 0
    for cls in recorders:
        original = cls._insert_events

        def insert_then_hang(self: Any, *args: Any, _original: Any = original, **kw: Any) -> Any:
            nonlocal writes
            ids = _original(self, *args, **kw)
            if writes == n:
                say(state=HANGING, events=len(args[1]))  # (cursor, stored events)
                time.sleep(3600)
            writes += 1
            return ids

        cls._insert_events = insert_then_hang


def hang_in_views(where: str) -> None:
    from kbes.projections import rebuild, tracking

    def hang(original: Any) -> Any:
        def then_hang(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            say(state=HANGING)
            time.sleep(3600)
            return result

        return then_hang

    if where == "building":
        # Not the call that starts the rebuild (position 0): one after a batch is folded.
        set_position = tracking.set_position

        def after_a_batch(c: Any, name: str, position: int) -> None:
            set_position(c, name, position)
            if name.endswith(tracking.NEXT_TRACKING) and position > 0:
                say(state=HANGING)
                time.sleep(3600)

        tracking.set_position = after_a_batch
    elif where == "switching":
        rebuild.switch = hang(rebuild.switch)
    else:
        raise SystemExit(f"unknown --hang-in-views {where!r}")


def edit_arguments(kb: str, article: str, i: int, version: str) -> dict[str, Any]:
    """The ith edit of the loop: the tests resend it, with its key, to the reopened store."""
    return {
        "knowledge_base_id": kb,
        "article_id": article,
        "content": f"edit {i}",
        "expected_version": version,
        "idempotency_key": f"{article}-{i}",  # keys are per knowledge base
    }


def edits(db: str, views: str, kb: str, article: str) -> None:
    """Read, then edit with the version read, forever; each acknowledged edit is one line."""
    store = open_store(db, views=views or None)
    say(state="open")
    read = {"knowledge_base_id": kb, "article_id": article}
    i = 0
    while True:
        version = call_tool(store, "read_knowledge_article", read).updated_at
        try:
            result = call_tool(
                store, "edit_knowledge_article", edit_arguments(kb, article, i, version)
            )
        except VersionConflict:  # another writer's edit of the same article: read again
            continue
        say(i=i, expected_version=version, updated_at=result.updated_at)
        i += 1


def main(argv: list[str]) -> None:
    hang = None
    if "--hang-at" in argv:
        at = argv.index("--hang-at")
        hang = int(argv[at + 1])
        del argv[at : at + 2]
        hang_at(hang)
    if "--hang-in-views" in argv:
        at = argv.index("--hang-in-views")
        hang_in_views(argv[at + 1])
        del argv[at : at + 2]
    if argv[0] == "edits":
        edits(*argv[1:5])
    elif argv[0] == "kbes":
        from kbes.cli import main as kbes

        kbes(argv[argv.index("--") + 1 :])
    else:
        raise SystemExit(f"unknown mode {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
