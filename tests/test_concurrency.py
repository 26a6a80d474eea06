"""Eight real processes racing on one SQLite file: compare-and-swap and idempotency hold."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import msgspec

from kbes import call_tool, format_timestamp, open_store
from kbes.errors import KbesError

RACERS = 8


def _race(db: str, barrier: Any, arguments: dict[str, Any], results: Any) -> None:
    store = open_store(db)
    try:
        barrier.wait(timeout=30)
        try:
            result = msgspec.to_builtins(call_tool(store, "edit_knowledge_article", arguments))
            results.put(("ok", result))
        except KbesError as e:
            results.put(("error", e.to_dict()))
    finally:
        store.close()


def _run_racers(db: Path, argument_sets: list[dict[str, Any]]) -> list[tuple[str, dict]]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(argument_sets))
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_race, args=(str(db), barrier, args, results)) for args in argument_sets
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return outcomes


def _setup(db: Path) -> tuple[str, str, str, int]:
    store = open_store(db)
    kb = str(store.create_knowledge_base("Race"))
    article = str(store.add_article(kb, "Contested", "original", publish=True))
    version = msgspec.to_builtins(
        call_tool(store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article})
    )["updated_at"]
    head = store.recorder.max_notification_id()
    store.close()
    return kb, article, version, head


def _article_events(db: Path, kb: str, article: str) -> list[str]:
    store = open_store(db)
    try:
        page = call_tool(
            store, "poll_resource_events", {"resource_type": "knowledge_base", "resource_id": kb}
        )
        return [e.type for e in page.events if e.article_id == article]
    finally:
        store.close()


def test_eight_writers_one_version_exactly_one_wins(tmp_path: Path) -> None:
    db = tmp_path / "race.sqlite"
    kb, article, version, head = _setup(db)
    outcomes = _run_racers(
        db,
        [
            {
                "knowledge_base_id": kb,
                "article_id": article,
                "content": f"writer {i}",
                "expected_version": version,
                "idempotency_key": f"writer-{i}",
            }
            for i in range(RACERS)
        ],
    )
    wins = [r for kind, r in outcomes if kind == "ok"]
    losses = [r for kind, r in outcomes if kind == "error"]
    assert len(wins) == 1
    assert len(losses) == RACERS - 1
    assert {e["code"] for e in losses} == {"version_conflict"}
    assert {e["current_version"] for e in losses} == {wins[0]["updated_at"]}
    assert _article_events(db, kb, article) == ["published", "saved"]
    store = open_store(db)
    assert store.recorder.max_notification_id() == head + 2  # one Saved, one receipt
    final = store.get_article(article)
    assert final.content in {f"writer {i}" for i in range(RACERS)}
    assert format_timestamp(final.updated_at) == wins[0]["updated_at"]
    store.close()


def test_eight_retries_of_one_key_write_once(tmp_path: Path) -> None:
    db = tmp_path / "replay.sqlite"
    kb, article, version, head = _setup(db)
    same = {
        "knowledge_base_id": kb,
        "article_id": article,
        "content": "the one change",
        "expected_version": version,
        "idempotency_key": "retry-me",
    }
    outcomes = _run_racers(db, [same] * RACERS)
    assert [kind for kind, _ in outcomes] == ["ok"] * RACERS
    replays = [r["replay"] for _, r in outcomes]
    assert replays.count(False) == 1 and replays.count(True) == RACERS - 1
    assert len({r["updated_at"] for _, r in outcomes}) == 1
    assert _article_events(db, kb, article) == ["published", "saved"]
    store = open_store(db)
    assert store.recorder.max_notification_id() == head + 2
    store.close()
