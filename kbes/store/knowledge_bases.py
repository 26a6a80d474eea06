"""Which knowledge bases exist: every command and query names one by id first, so the answer is
remembered once found (a knowledge base is never deleted)."""

from __future__ import annotations

from uuid import UUID

from kbes.domain.errors import KnowledgeBaseNotFound
from kbes.domain.ids import parse_id
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.store.event_log import EventLog


class KnownKnowledgeBases:
    """The knowledge bases this process has found in the log, or created."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._known: set[UUID] = set()

    def require(self, knowledge_base_id: UUID | str) -> UUID:
        """The knowledge base's UUID if it exists; `KnowledgeBaseNotFound` naming the id as
        given otherwise (an id that parses to no UUID names no knowledge base either)."""
        kb = parse_id(knowledge_base_id)
        if kb is None:
            raise KnowledgeBaseNotFound(knowledge_base_id)
        if kb not in self._known:
            if self.log.get(kb, KnowledgeBase) is None:
                raise KnowledgeBaseNotFound(knowledge_base_id)
            self._known.add(kb)
        return kb

    def add(self, knowledge_base_id: UUID) -> None:
        """One this process has just created."""
        self._known.add(knowledge_base_id)


__all__ = ["KnownKnowledgeBases"]
