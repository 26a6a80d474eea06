"""A knowledge base: the unit of grants, of the event feed and of search."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from kbes.domain.author import Author, upcast_no_author
from kbes.domain.limits import require_name


class KnowledgeBase(Aggregate):
    """A named collection of articles."""

    class Created(Aggregate.Created):
        name: str
        author: Author | None

        class_version = 2
        upcast_v1_v2 = staticmethod(upcast_no_author)

    def __init__(self, name: str) -> None:
        self.name = name

    @classmethod
    def create(cls, name: str, *, at: datetime, by: Author | None = None) -> KnowledgeBase:
        """A new knowledge base called `name` (blanks around it dropped), which must follow
        the title rule (`kbes.domain.limits.name_problem`). Checked here, for every door, and
        not in `__init__`, which also folds the log: a log written before the rule, with a
        name it refuses, still loads."""
        return cls._create(cls.Created, name=require_name(name.strip()), author=by, timestamp=at)

    @staticmethod
    def create_id(**_: object) -> UUID:
        return uuid4()
