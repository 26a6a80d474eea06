"""The msgspec mapper: every stored event and a snapshot come back exactly as they went in."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import msgspec
import pytest
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import MapperDeserialisationError, StoredEvent

from kbes import Article, EditReceipt, KnowledgeBase, MsgspecMapper


def test_every_event_round_trips() -> None:
    mapper = MsgspecMapper()
    kb = KnowledgeBase._create(KnowledgeBase.Created, name="Support", author=None)
    article = Article.draft(kb.id, "Title", "Body ünïcode")
    article.publish()
    article.save("New body")
    article.save("Newer body", "New title")
    article.unpublish()
    receipt = EditReceipt.record(
        knowledge_base_id=kb.id, idempotency_key="k", article_id=article.id,
        fingerprint="f" * 64, title="New title", updated_at=article.updated_at,
        at=datetime.now(UTC),
    )  # fmt: skip
    events = [*kb.collect_events(), *article.collect_events(), *receipt.collect_events()]
    for event in events:
        stored = mapper.to_stored_event(event)
        assert msgspec.json.decode(stored.state)  # plain JSON, readable in an export
        again = mapper.to_domain_event(stored)
        assert type(again) is type(event)
        assert again.__dict__ == event.__dict__


def test_snapshot_round_trips_with_typed_state() -> None:
    mapper = MsgspecMapper()
    article = Article.draft(uuid4(), "Title", "Body")
    article.publish()
    snapshot = Snapshot.take(article)
    again = mapper.to_domain_event(mapper.to_stored_event(snapshot))
    restored = again.mutate(None)
    assert restored.knowledge_base_id == article.knowledge_base_id
    assert restored.updated_at == article.updated_at
    assert vars(restored) == {k: v for k, v in vars(article).items() if k != "_pending_events"} | {
        "_pending_events": []
    }


def test_corrupt_state_is_a_mapper_error_naming_the_event() -> None:
    stored = StoredEvent(
        originator_id=uuid4(), originator_version=2,
        topic="kbes.article:Article.Saved", state=b'{"content": 5}',
    )  # fmt: skip
    with pytest.raises(MapperDeserialisationError, match="originator_version 2"):
        MsgspecMapper().to_domain_event(stored)
