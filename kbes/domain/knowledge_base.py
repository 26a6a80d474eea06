"""A knowledge base: the unit of grants, of the event feed and of search."""

from __future__ import annotations

from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate


class KnowledgeBase(Aggregate):
    """A named collection of articles."""

    class Created(Aggregate.Created):
        name: str

    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def create_id(**_: object) -> UUID:
        return uuid4()
