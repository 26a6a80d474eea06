"""Which knowledge bases a caller may touch, checked once for every tool call, with the one id
parser (kbes.ids) the rest of kbes uses: an id that parses to no UUID names no knowledge base."""

from __future__ import annotations

from uuid import UUID

from kbes.errors import NotFound
from kbes.ids import parse_id
from kbes.tools.messages import no_knowledge_base

Grants = frozenset[str] | None
"""Knowledge-base ids (canonical UUID text) a caller may touch; None means all."""


def admit(knowledge_base_id: str, grants: Grants) -> UUID:
    """The knowledge base's UUID if `grants` admit it; `not_found` otherwise, in the words an
    unknown knowledge base gets, so a grant never reveals what exists beyond it."""
    kb = parse_id(knowledge_base_id)
    if kb is None or (grants is not None and str(kb) not in grants):
        raise NotFound(no_knowledge_base(knowledge_base_id))
    return kb
