"""Which article each Markdown file of an imported folder became: the folder's record in the
log, so that `kbes import --sync` knows which articles are the folder's (and no others), where
each one's file is now, and which it unpublished itself because their files went away.

It lives in the log like every other fact, written in the same transaction as the articles'
events, so it is never ahead of or behind them: a sync killed part-way wrote all of it or none
(SQLite), and the next sync completes the rest from the log alone. Its id is derived from the
knowledge base and the source's name, so every process finds the same record."""

from __future__ import annotations

from datetime import datetime
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from kbes.domain.aggregate import copy_aggregate
from kbes.domain.author import Author, upcast_no_author

SOURCE_NAMESPACE = uuid5(NAMESPACE_URL, "https://kbes.invalid/folder-source")


class FolderSource(Aggregate):
    """A folder imported into a knowledge base: its files' paths and their articles."""

    knowledge_base_id: UUID
    name: str
    files: dict[str, UUID]
    """Each file's path (relative to the folder, `/`-separated) and its article."""
    retired: list[UUID]
    """Articles this source unpublished because their file went away: a file that brings one
    back publishes it again, where an article a person unpublished stays unpublished."""

    class Started(Aggregate.Created):
        knowledge_base_id: UUID
        name: str
        author: Author | None

        class_version = 2
        upcast_v1_v2 = staticmethod(upcast_no_author)

    class Mapped(Aggregate.Event):
        """One import's changes to the record: paths newly read or moved (`files`), paths no
        longer read (`dropped`), articles unpublished (`retired`) or brought back (`revived`)."""

        knowledge_base_id: UUID
        files: dict[str, UUID]
        dropped: list[str]
        retired: list[UUID]
        revived: list[UUID]
        author: Author | None

        class_version = 2
        upcast_v1_v2 = staticmethod(upcast_no_author)

        def apply(self, source: FolderSource) -> None:
            for path in self.dropped:
                source.files.pop(path, None)
            source.files.update(self.files)
            back = set(self.revived)
            source.retired = [a for a in source.retired if a not in back] + self.retired

    def __init__(self, knowledge_base_id: UUID, name: str) -> None:
        self.knowledge_base_id = knowledge_base_id
        self.name = name
        self.files = {}
        self.retired = []

    def __deepcopy__(self, memo: dict[int, object]) -> FolderSource:
        return copy_aggregate(self, memo)

    @staticmethod
    def create_id(knowledge_base_id: UUID, name: str) -> UUID:
        return source_id(knowledge_base_id, name)

    @classmethod
    def start(
        cls, knowledge_base_id: UUID, name: str, *, at: datetime, by: Author | None = None
    ) -> FolderSource:
        return cls._create(
            cls.Started, knowledge_base_id=knowledge_base_id, name=name, author=by, timestamp=at
        )

    def map(
        self,
        files: dict[str, UUID],
        dropped: list[str],
        retired: list[UUID],
        revived: list[UUID],
        *,
        at: datetime,
        by: Author | None = None,
    ) -> None:
        """Record one import's changes; nothing when there are none."""
        if files or dropped or retired or revived:
            self.trigger_event(
                self.Mapped,
                knowledge_base_id=self.knowledge_base_id,
                files=files,
                dropped=dropped,
                retired=retired,
                revived=revived,
                author=by,
                timestamp=at,
            )


def source_id(knowledge_base_id: UUID, name: str) -> UUID:
    return uuid5(SOURCE_NAMESPACE, f"{knowledge_base_id.hex}:{name}")
