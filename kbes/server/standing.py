"""A caller's grants as they stand at each later moment, for what outlives the request that
opened it: a `subscriptions/listen` stream, a handshake-era session's subscriptions.

Grants were read once, when the stream opened, so after `kbes token remove` an open stream
still rang, and a token narrowed to one knowledge base still heard another (issue 35, defect
8). A stream now asks its `GrantsNow` before each ring: the token's grants in the tokens file
as it is then (read again if it changed), or `REVOKED` once its NAME is gone."""

from __future__ import annotations

from collections.abc import Callable

from kbes.tools.codes import NotFound
from kbes.tools.grants import Grants, admit


class Revoked:
    """The caller's token is no longer in the tokens file."""

    def __repr__(self) -> str:
        return "REVOKED"


REVOKED = Revoked()

GrantsNow = Callable[[], "Grants | Revoked"]
"""The caller's grants now; `REVOKED` once its token is gone."""

Standing = Callable[[], GrantsNow]
"""Called inside a request: that caller's `GrantsNow`."""


def fixed(grants: Grants) -> Standing:
    """The standing of callers whose grants never change (stdio, HTTP without tokens)."""
    return lambda: lambda: grants


def may_hear(knowledge_base_id: str, grants: Grants | Revoked) -> bool:
    """Whether a caller with `grants` now may hear of a change in this knowledge base."""
    if isinstance(grants, Revoked):
        return False
    try:
        admit(knowledge_base_id, grants)
    except NotFound:
        return False
    return True


def snapshot(grants: Callable[[], Grants]) -> Standing:
    """The standing that holds a caller to the grants it had when its stream opened."""

    def standing() -> GrantsNow:
        held = grants()
        return lambda: held

    return standing
