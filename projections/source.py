"""What the views read their events from: the whole log, as stored rows, and a decoder for them.

The views fold the log straight from stored rows into tuples, so a replay builds no
Notification, UUID and domain event per event only to throw them away. The store implements
both protocols, on either backend: its recorders are `LogReader`s (kbes.store.sqlite,
kbes.store.postgres) and its mapper an `EventDecoder` (kbes.store.mapper)."""

from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent

StoredRow = tuple[int, str, int, str, bytes]
"""A stored event as the read side needs it: `(notification id, originator id as canonical UUID
text, originator version, topic, encoded state)`. A plain tuple, as the database driver hands it
over: a replay reads millions of them."""


class LogReader(Protocol):
    """The reads the views make of the whole log, every knowledge base's events in order."""

    def head(self) -> int:
        """The head of the log: its last notification id, 0 when it is empty."""
        ...

    def select_notification_rows(self, start: int, limit: int, stop: int) -> list[StoredRow]:
        """Up to `limit` events of the whole log, from notification id `start` to `stop`."""
        ...


class EventDecoder(Protocol):
    """What the views need of the mapper (kbes.store.mapper.MsgspecMapper)."""

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


__all__ = ["EventDecoder", "LogReader", "StoredRow", "full_decode"]
