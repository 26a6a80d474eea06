"""What the application's queries and commands answer, in domain terms: plain values the
agent contract (kbes.tools) and the CLI each turn into their own shapes."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple
from uuid import UUID


class Hit(NamedTuple):
    """One search hit: a current published article, at the version the index holds."""

    article_id: str
    title: str
    snippet: str
    updated_at: str


class CurrentArticle(NamedTuple):
    """A published article as it stands now; `updated_at` is the version to cite."""

    article_id: str
    title: str
    content: str
    updated_at: str


class Edited(NamedTuple):
    """The outcome of an edit: the article's version after it, and whether this answer is the
    replay of an earlier one with the same idempotency key."""

    knowledge_base_id: UUID
    article_id: UUID
    title: str
    updated_at: datetime
    replay: bool


__all__ = ["CurrentArticle", "Edited", "Hit"]
