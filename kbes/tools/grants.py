"""Which knowledge bases a caller may touch, checked once for every tool call, with the one id
parser (kbes.domain.ids) the rest of kbes uses: an id that parses to no UUID names no
knowledge base."""

from __future__ import annotations

from uuid import UUID

from kbes.domain.ids import canonical_id, parse_id
from kbes.tools.refusals import no_knowledge_base

Grants = frozenset[str] | None
"""Knowledge-base ids (canonical UUID text) a caller may touch; None means all."""


def admit(knowledge_base_id: str, grants: Grants) -> UUID:
    """The knowledge base's UUID if `grants` admit it; `not_found` otherwise, in the words an
    unknown knowledge base gets, so a grant never reveals what exists beyond it."""
    kb = parse_id(knowledge_base_id)
    if kb is None or (grants is not None and str(kb) not in grants):
        raise no_knowledge_base(knowledge_base_id)
    return kb


EVERY = "*"
"""A grants list that names every knowledge base (the caller's grants then stand alone)."""


class BadGrantList(ValueError):
    """A grants list holds something that names no knowledge base."""

    def __init__(self, message: str, item: str) -> None:
        super().__init__(message)
        self.item = item
        """The part of the list at fault."""


def parse_grant_list(text: str) -> Grants:
    """A grants list as a tokens file's GRANTS and `kbes serve --grant` write it: `*` for every
    knowledge base, or knowledge-base ids separated by commas, as canonical ids. The ids are
    not looked up: whether they exist is the caller's question. A padded id is no id here
    either (kbes.domain.ids)."""
    if text == EVERY:
        return None
    grants = set()
    for item in text.split(","):
        if item == EVERY:
            raise BadGrantList(
                f"'{EVERY}' grants every knowledge base: give it alone, not listed", item
            )
        kb = canonical_id(item)
        if kb is None:
            raise BadGrantList(f"{item!r} is not a knowledge-base id (or '{EVERY}')", item)
        grants.add(kb)
    return frozenset(grants)
