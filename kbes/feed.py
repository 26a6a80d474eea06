"""What a knowledge base's feed reports: one article event agents may see."""

from __future__ import annotations

from typing import NamedTuple


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


__all__ = ["FeedEvent"]
