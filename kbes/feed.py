"""What a recorder offers the read side, whichever database holds the log.

The views fold the log, and a poll pages through one knowledge base's feed; both read stored
rows straight into tuples, so neither builds a Notification, a UUID and a domain event per
event only to throw them away. The SQLite recorder (kbes.recorder) and the PostgreSQL one
(kbes.postgres) both implement `FeedReader`, so each query has one path on either backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent


class FeedEvent(NamedTuple):
    """One event of a knowledge base's feed, as the poll tool reports it."""

    sequence: int
    """The event's notification id: its position in the whole log."""
    type: str
    """`published`, `saved`, `retitled` or `unpublished` (kbes.article.EVENT_TYPES)."""
    article_id: str
    """Canonical UUID text."""
    updated_at: str
    """The article's version after the event, as `clock.format_timestamp` writes it."""


def resume_point(events: list[FeedEvent], head: int, limit: int) -> tuple[int, bool]:
    """Where the next page starts, and whether one is waiting: a full page may have more
    behind it, so resume after its last event; a short one has read to `head`, so resume
    there (past drafts and other knowledge bases' events, which are never read again)."""
    full = len(events) == limit
    return (events[-1].sequence if full else head), full


StoredRow = tuple[int, str, int, str, bytes]
"""A stored event as the read side needs it: `(notification id, originator id as canonical UUID
text, originator version, topic, encoded state)`. A plain tuple, as the database driver hands it
over: a replay reads millions of them."""


class FeedReader(Protocol):
    """The reads the views and the poll tool make of the log."""

    def max_notification_id(self) -> int | None:
        """The head of the log (None when it is empty)."""
        ...

    def select_notification_rows(self, start: int, limit: int, stop: int) -> list[StoredRow]:
        """Up to `limit` events of the whole log, from notification id `start` to `stop`."""
        ...

    def select_feed_rows(
        self, knowledge_base_hex: str, after: int, limit: int
    ) -> tuple[list[StoredRow], int]:
        """One consistent read: up to `limit` visible events of one knowledge base after
        `after`, and the head of the whole log at that moment."""
        ...


class EventDecoder(Protocol):
    """What the views need of the mapper (kbes.mapper.MsgspecMapper)."""

    def decode_fields(self, topic: str, state: bytes) -> tuple[type, Any] | None:
        """An event's class and fields without building the domain event; None if the event
        must go through `to_domain_event` (upcasting, snapshots)."""
        ...

    def to_domain_event(self, stored_event: StoredEvent) -> Any: ...


def full_decode(mapper: EventDecoder, row: StoredRow) -> Any:
    """The domain event of `row` through the mapper's full path: the few events the fast
    decoders leave to it (upcasting, snapshots), whichever reader met them."""
    nid, originator_id, version, topic, state = row
    notification = Notification(
        id=nid,
        originator_id=UUID(originator_id),
        originator_version=version,
        topic=topic,
        state=state,
    )
    return mapper.to_domain_event(notification)


class LoneSelect(Protocol):
    """A datastore that runs one SELECT without a transaction around it (kbes.recorder)."""

    def query(
        self, statement: str, params: Sequence[Any], *, named: bool = False
    ) -> list[Any] | None:
        """The rows; None where the caller must use a transaction instead."""
        ...


__all__ = [
    "EventDecoder",
    "FeedEvent",
    "FeedReader",
    "LoneSelect",
    "StoredRow",
    "full_decode",
    "resume_point",
]
