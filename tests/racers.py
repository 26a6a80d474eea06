"""Real processes racing edits on one store: the harness shared by the SQLite and PostgreSQL
concurrency tests."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import msgspec

from kbes import call_tool, open_store
from kbes.tools.codes import KbesError

RACERS = 8


def _race(
    db: str, views: str | None, barrier: Any, arguments: dict[str, Any], results: Any
) -> None:
    """One racer: its own process and store (and views, with a PostgreSQL log)."""
    store = open_store(db, views=views)
    try:
        barrier.wait(timeout=60)
        try:
            result = msgspec.to_builtins(call_tool(store, "edit_knowledge_article", arguments))
            results.put(("ok", result))
        except KbesError as e:
            results.put(("error", e.to_dict()))
    finally:
        store.close()


def run_racers(
    db: str, argument_sets: list[dict[str, Any]], views_dir: Path | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Start one process per argument set; all open the store, meet at a barrier, then edit at
    once. Returns each racer's ("ok", result) or ("error", error JSON)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(argument_sets))
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_race,
            args=(
                db,
                None if views_dir is None else str(views_dir / f"views-{i}.sqlite"),
                barrier,
                arguments,
                results,
            ),
        )
        for i, arguments in enumerate(argument_sets)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcomes


def rival_writers(kb: str, article: str, version: str) -> list[dict[str, Any]]:
    """RACERS different edits of one article version, each with its own key."""
    return [
        {
            "knowledge_base_id": kb,
            "article_id": article,
            "content": f"writer {i}",
            "expected_version": version,
            "idempotency_key": f"writer-{i}",
        }
        for i in range(RACERS)
    ]


def one_retried_edit(kb: str, article: str, version: str) -> list[dict[str, Any]]:
    """The same edit, with the same key, sent RACERS times."""
    same = {
        "knowledge_base_id": kb,
        "article_id": article,
        "content": "the one change",
        "expected_version": version,
        "idempotency_key": "retry-me",
    }
    return [same] * RACERS
