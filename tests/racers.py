"""Real processes racing edits on one store: the harness shared by the SQLite and PostgreSQL
concurrency tests."""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from kbes import call_tool, open_store
from kbes.tools.codes import KbesError

RACERS = 8


class RacerFailed(RuntimeError):
    """A racer could not run its edit: its store did not open, or it died."""


def _race(
    index: int,
    db: str,
    views: str | None,
    barrier: Any,
    arguments: dict[str, Any],
    results: Any,
) -> None:
    """One racer: its own process and store (and views, with a PostgreSQL log). Whatever
    stops it before its answer is reported at once, and breaks the barrier so the others stop
    waiting (they report "broken", which is not the cause)."""
    try:
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
    except threading.BrokenBarrierError:
        results.put(("broken", f"racer {index}: the barrier broke"))
    except BaseException:
        results.put(("failed", f"racer {index}: {traceback.format_exc()}"))
        barrier.abort()


def run_racers(
    db: str,
    argument_sets: list[dict[str, Any]],
    views_dir: Path | None = None,
    *,
    timeout: float = 120,
) -> list[tuple[str, dict[str, Any]]]:
    """Start one process per argument set; all open the store, meet at a barrier, then edit at
    once. Returns each racer's ("ok", result) or ("error", error JSON); raises `RacerFailed`
    with a racer's traceback as soon as one reports a failure or dies without an answer."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(argument_sets))
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_race,
            args=(
                i,
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
    try:
        outcomes = _collect(results, procs, timeout)
    except BaseException:
        for p in procs:
            p.kill()
            p.join(timeout=10)
        raise
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcomes


def _collect(
    results: Any, procs: Sequence[mp.process.BaseProcess], timeout: float
) -> list[tuple[str, dict[str, Any]]]:
    """The racers' answers, or `RacerFailed` as soon as one failed, died or broke."""
    outcomes: list[tuple[str, dict[str, Any]]] = []
    broken: list[str] = []
    deadline = time.monotonic() + timeout
    while len(outcomes) + len(broken) < len(procs):
        try:
            kind, value = results.get(timeout=0.5)
        except queue.Empty:
            kind, value = "", None
        if kind == "failed":
            raise RacerFailed(value)
        if kind == "broken":
            broken.append(value)
        elif kind:
            outcomes.append((kind, value))
            continue
        dead = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode not in (None, 0)]
        if dead:
            raise RacerFailed(f"racers died without an answer (index, exit code): {dead}")
        if time.monotonic() > deadline:
            raise RacerFailed(f"{len(outcomes)} of {len(procs)} racers answered in {timeout} s")
    if broken:
        raise RacerFailed(f"the racers' barrier broke: {broken}")
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
