"""One parser for every id a caller hands in (knowledge bases, articles, grants), so the
server's grant check, the application and the CLI can never disagree about what names an
aggregate: a padded or otherwise odd id is no id everywhere.

An id is a UUID written in one of the forms of `ID_FORMS`: canonical (`8-4-4-4-12` hex digits,
hyphenated), or as 32 hex digits, in either case, alone, braced or after `urn:uuid:`. Each
names what its canonical text names, and grants compare canonical text, so no spelling reaches
a knowledge base that is not granted (docs/security.md). Anything else `uuid.UUID` would also
read (hyphens anywhere, doubled braces or prefixes, one brace, non-ASCII digits, blanks) is no
id."""

from __future__ import annotations

import re
from uuid import UUID

from kbes.domain.errors import InvalidId


def _hex(group: str) -> str:
    """A UUID's 32 hex digits, hyphenated 8-4-4-4-12 or not at all (`group` names the choice)."""
    h, dash = "[0-9a-fA-F]", f"(?P={group})"
    return rf"{h}{{8}}(?P<{group}>-?){h}{{4}}{dash}{h}{{4}}{dash}{h}{{4}}{dash}{h}{{12}}"


_ID = re.compile(rf"(?:urn:uuid:)?{_hex('plain')}|\{{{_hex('braced')}\}}", re.ASCII)
ID_FORMS = ("canonical", "upper case", "32 hex digits", "braced", "urn:uuid:")
"""The spellings of an id that name what its canonical text names (docs/security.md)."""


def parse_id(value: object) -> UUID | None:
    """The UUID `value` names, or None. Accepts a UUID or its text in one of `ID_FORMS`;
    surrounding whitespace, and the other forms `uuid.UUID` reads, are no id."""
    if isinstance(value, UUID):
        return value
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        return None
    return UUID(value)


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
