"""The idempotency record of one accepted edit. Its id is derived from the knowledge base and
the key, so two processes replaying one key collide on the same aggregate and only one wins."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from kbes.domain.aggregate import copy_aggregate
from kbes.domain.author import Author, upcast_no_author
from kbes.domain.clock import format_timestamp

RECEIPT_NAMESPACE = uuid5(NAMESPACE_URL, "https://kbes.invalid/edit-receipt")


class EditReceipt(Aggregate):
    """What an idempotency key was used for, and what it returned."""

    class Recorded(Aggregate.Created):
        knowledge_base_id: UUID
        article_id: UUID
        fingerprint: str
        title: str
        updated_at: datetime
        author: Author | None

        class_version = 2
        upcast_v1_v2 = staticmethod(upcast_no_author)

    def __init__(
        self,
        knowledge_base_id: UUID,
        article_id: UUID,
        fingerprint: str,
        title: str,
        updated_at: datetime,
    ) -> None:
        self.knowledge_base_id = knowledge_base_id
        self.article_id = article_id
        self.fingerprint = fingerprint
        self.title = title
        self.updated_at = updated_at

    def __deepcopy__(self, memo: dict[int, object]) -> EditReceipt:
        return copy_aggregate(self, memo)

    @staticmethod
    def create_id(knowledge_base_id: UUID, idempotency_key: str) -> UUID:
        return receipt_id(knowledge_base_id, idempotency_key)

    @classmethod
    def record(
        cls,
        *,
        knowledge_base_id: UUID,
        idempotency_key: str,
        article_id: UUID,
        fingerprint: str,
        title: str,
        updated_at: datetime,
        at: datetime,
        by: Author | None = None,
    ) -> EditReceipt:
        return cls._create(
            cls.Recorded,
            id=receipt_id(knowledge_base_id, idempotency_key),
            knowledge_base_id=knowledge_base_id,
            article_id=article_id,
            fingerprint=fingerprint,
            title=title,
            updated_at=updated_at,
            author=by,
            timestamp=at,
        )


def receipt_id(knowledge_base_id: UUID, idempotency_key: str) -> UUID:
    return uuid5(RECEIPT_NAMESPACE, f"{knowledge_base_id.hex}:{idempotency_key}")


def edit_fingerprint(
    article_id: UUID, content: str, title: str | None, expected_version: datetime
) -> str:
    """What makes two edits "the same request" for an idempotency key. The material is
    compact JSON, byte for byte what msgspec writes (receipts already in logs hold its hash)."""
    material = json.dumps(
        [str(article_id), content, title, format_timestamp(expected_version)],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()
