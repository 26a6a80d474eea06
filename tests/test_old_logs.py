"""Logs and exports written before the domain was a sub-package still load.

`tests/fixtures/log-3f3f73d/` was made by kbes at commit 3f3f73d (its `make.py`), when the
aggregates lived in `kbes.article`, `kbes.knowledge_base` and `kbes.receipt`: `log.sql` is that
store's event tables (events, snapshots, feed index; no views), `export.jsonl` its
`kbes log export`. Their topics name the old modules; kbes.domain.topics points them at today's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from kbes import call_tool, open_store
from kbes.cli import main
from kbes.domain.article import Article
from kbes.domain.receipt import edit_fingerprint
from kbes.log.export import LogSource
from kbes.log.history import History
from kbes.store.application import KnowledgeBaseStore
from kbes.store.sqlite import KbesSQLiteFactory
from kbes.tools.codes import KbesError

FIXTURE = Path(__file__).parent / "fixtures" / "log-3f3f73d"
KB = "1a88c3ca-cf16-47a2-8751-136a91d2ae3c"
REFUNDS = "2353db27-1b85-4731-86d0-a6c6d3587ce8"
SHIPPING = "e66fc142-3fd9-45fd-b9d3-ba042ff300bc"
DRAFT = "4f95cf10-f5e0-4059-bbc6-3f7b7f0da7cd"


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript((FIXTURE / "log.sql").read_text(encoding="utf-8"))
    topics = {row[0] for row in sqlite3.connect(path).execute("SELECT topic FROM stored_events")}
    assert "kbes.article:Article.Saved" in topics  # the fixture is what it says
    return path


@pytest.fixture
def store(old_db: Path) -> Iterator[KnowledgeBaseStore]:
    opened = open_store(old_db)
    yield opened
    opened.close()


def test_an_old_log_folds_into_views_and_answers_every_tool(store: KnowledgeBaseStore) -> None:
    hits = call_tool(store, "search_knowledge_base", {"knowledge_base_id": KB, "query": "refund"})
    assert [(h.article_id, h.title) for h in hits.hits] == [(REFUNDS, "Refund policy")]
    read = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": KB, "article_id": REFUNDS}
    )
    assert read.content == "Refunds take three days."
    for gone, code in ((SHIPPING, "gone"), (DRAFT, "not_found")):
        with pytest.raises(Exception) as refused:
            call_tool(
                store, "read_knowledge_article", {"knowledge_base_id": KB, "article_id": gone}
            )
        assert isinstance(refused.value, KbesError) and refused.value.code == code
    types: list[str] = []
    after = 0
    while True:
        page = call_tool(
            store,
            "poll_resource_events",
            {"resource_type": "knowledge_base", "resource_id": KB, "after_sequence": after},
        )
        types += [event.type for event in page.events]
        if not page.has_more:
            break
        after = page.next_sequence
    assert {t: types.count(t) for t in set(types)} == {
        "published": 2,
        "saved": 121,
        "retitled": 1,
        "unpublished": 1,
    }


def test_an_old_snapshot_and_receipt_load(store: KnowledgeBaseStore) -> None:
    shipping = store.get_article(SHIPPING)
    assert isinstance(shipping, Article) and shipping.content == "We ship worldwide, revision 119."
    assert not shipping.published and shipping.version == 123
    read = History.of(store).article_as_of(REFUNDS, "2026-11-30T11:02:00Z")
    assert read is not None and read.title == "Refund policy"
    # The old receipt still binds its key: the same request replays, nothing is written twice.
    first = History.of(store).versions(REFUNDS)[-2]
    replay = call_tool(
        store,
        "edit_knowledge_article",
        {
            "knowledge_base_id": KB,
            "article_id": REFUNDS,
            "content": "Refunds take three days.",
            "expected_version": first.updated_at,
            "idempotency_key": "k-1",
        },
    )
    assert replay.replay is True


def test_new_events_append_to_an_old_log(store: KnowledgeBaseStore) -> None:
    store.save_article(KB, REFUNDS, content="Refunds take two days.")
    read = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": KB, "article_id": REFUNDS}
    )
    assert read.content == "Refunds take two days."
    assert isinstance(store.log.factory, KbesSQLiteFactory)
    reopened = open_store(store.log.factory.datastore.pool.db_name)  # a cold process's view
    try:
        assert reopened.get_article(REFUNDS).content == "Refunds take two days."
    finally:
        reopened.close()


def test_an_old_log_exports_as_the_old_code_did_with_todays_topics(old_db: Path) -> None:
    """An export names each event's class where it lives now; all else is as it was."""
    result = CliRunner().invoke(main, ["log", "export", "--db", str(old_db)])
    assert result.exit_code == 0, result.output
    old = (FIXTURE / "export.jsonl").read_text(encoding="utf-8")
    for module in ("article", "knowledge_base", "receipt"):
        old = old.replace(f'"topic":"kbes.{module}:', f'"topic":"kbes.domain.{module}:')
    assert result.output == old


def test_an_old_export_is_an_event_source(store: KnowledgeBaseStore) -> None:
    exported = History(LogSource.from_path(str(FIXTURE / "export.jsonl")))
    live = History.of(store)
    for article in (REFUNDS, SHIPPING):
        assert [v.updated_at for v in exported.versions(article)] == [
            v.updated_at for v in live.versions(article)
        ]
        last = live.versions(article)[-1].updated_at
        assert exported.article_at(article, last) == live.article_at(article, last)
    assert exported.knowledge_base_exists(UUID(KB))


@pytest.mark.parametrize(
    ("content", "title", "fingerprint"),
    [
        (
            'Tab\there, "quotes", \\ back, \x00\x1f\x7f, é ½ \u2028 \U0001f469',
            None,
            "b823a0fc1803b17606707d1a2787e22e24fc06e561fa96630f3f8b6eeef99c54",
        ),
        ("x", "Réglages — ½", "80225a130d9f98910887b95fa3ccdbf888dad938693530479a75b750b009d6c9"),
    ],
)
def test_an_edit_fingerprint_is_the_one_old_receipts_hold(
    content: str, title: str | None, fingerprint: str
) -> None:
    # Pinned from the msgspec-encoded material of kbes before the domain dropped msgspec: a
    # retry of an edit recorded then must still match its receipt.
    at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    assert edit_fingerprint(UUID(REFUNDS), content, title, at) == fingerprint
