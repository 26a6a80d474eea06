"""Eight real processes racing on one SQLite file: compare-and-swap and idempotency hold."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest
from racers import RACERS, RacerFailed, one_retried_edit, rival_writers, run_racers

from kbes import call_tool, format_timestamp, open_store

pytestmark = pytest.mark.slow


def _setup(db: Path) -> tuple[str, str, str, int]:
    store = open_store(db)
    kb = str(store.create_knowledge_base("Race"))
    article = str(store.add_article(kb, "Contested", "original", publish=True))
    version = msgspec.to_builtins(
        call_tool(store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": article})
    )["updated_at"]
    head = store.head()
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
    outcomes = run_racers(str(db), rival_writers(kb, article, version))
    wins = [r for kind, r in outcomes if kind == "ok"]
    losses = [r for kind, r in outcomes if kind == "error"]
    assert len(wins) == 1
    assert len(losses) == RACERS - 1
    assert {e["code"] for e in losses} == {"version_conflict"}
    assert {e["current_version"] for e in losses} == {wins[0]["updated_at"]}
    assert _article_events(db, kb, article) == ["published", "saved"]
    store = open_store(db)
    assert store.head() == head + 2  # one Saved, one receipt
    final = store.get_article(article)
    assert final.content in {f"writer {i}" for i in range(RACERS)}
    assert format_timestamp(final.updated_at) == wins[0]["updated_at"]
    store.close()


def test_eight_retries_of_one_key_write_once(tmp_path: Path) -> None:
    db = tmp_path / "replay.sqlite"
    kb, article, version, head = _setup(db)
    outcomes = run_racers(str(db), one_retried_edit(kb, article, version))
    assert [kind for kind, _ in outcomes] == ["ok"] * RACERS
    replays = [r["replay"] for _, r in outcomes]
    assert replays.count(False) == 1 and replays.count(True) == RACERS - 1
    assert len({r["updated_at"] for _, r in outcomes}) == 1
    assert _article_events(db, kb, article) == ["published", "saved"]
    store = open_store(db)
    assert store.head() == head + 2
    store.close()


def test_a_racer_that_cannot_open_its_store_reports_why_at_once(tmp_path: Path) -> None:
    """Not a wait for every racer's answer (120 s) ending in `queue.Empty`: the real error."""
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database, and long enough for SQLite to notice that it is not\n")
    started = time.monotonic()
    with pytest.raises(RacerFailed, match="file is not a database"):
        run_racers(str(not_a_db), [{}, {}])
    assert time.monotonic() - started < 30
