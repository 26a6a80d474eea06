"""One parser for every id a caller hands in (knowledge bases, articles, grants), so the
server's grant check, the application and the CLI can never disagree about what names an
aggregate: a padded or otherwise odd id is no id everywhere."""

from __future__ import annotations

from uuid import UUID

from kbes.domain.errors import InvalidId


def parse_id(value: object) -> UUID | None:
    """The UUID `value` names, or None. Accepts a UUID or its text forms that `uuid.UUID`
    accepts (hyphens, braces, `urn:uuid:`); surrounding whitespace is no id."""
    if isinstance(value, UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return UUID(value)
    except ValueError:
        return None


def canonical_id(value: object) -> str | None:
    """The id as the store compares them (canonical UUID text), or None."""
    parsed = parse_id(value)
    return None if parsed is None else str(parsed)


def require_id(value: object, field: str) -> UUID:
    """The UUID `value` names; `InvalidId` naming `field` otherwise."""
    parsed = parse_id(value)
    if parsed is None:
        raise InvalidId(field, value)
    return parsed
