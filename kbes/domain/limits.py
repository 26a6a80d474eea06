"""The domain's limits on what an article may hold, and the one title rule.

Every door (an agent's edit, `kbes article add/save`, `kbes import`) ends in the `Article`
aggregate, which applies these checks, so no door can store what another cannot write back. The
agent tools' JSON schemas are generated from the same `Limits`, so the advertised contract and
the enforced one agree. A refusal is a fact (`BlankTitle`, `TitleCharacter`, `TooLong`,
`EmptyKey`), which each door words for its audience.

The limits are a store's: its settings read them when it is opened (`kbes.store.settings`,
from `KBES_MAX_TITLE_CHARS`, `KBES_MAX_CONTENT_CHARS`, `KBES_MAX_IDEMPOTENCY_KEY_CHARS`), and
the store passes them to every check; `DEFAULT_LIMITS` where none are given.

The title rule: not blank; no character a terminal or a table would read as structure or that
hides what follows. Refused are the Unicode categories Cc (controls: NUL, tab, newline, DEL...),
Cs (lone surrogates), Zl and Zp (line and paragraph separators, which `str.splitlines` splits
on), and Cf (format characters: bidi overrides such as U+202E, zero-width spaces, the BOM), except
U+200C and U+200D (zero-width non-joiner and joiner), which Persian, Indic scripts and emoji
sequences need to be spelled at all.

A knowledge base's name follows the same rule, at most `NAME_CHARS` long: it is the title of a
knowledge base, shown one to a line by `kbes kb list` and to models, where a newline or a bidi
override in it could forge a row or turn text around (`name_problem`). Its limit is fixed, not
a setting: a store's title limit is for articles."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from kbes.domain.errors import (
    BlankAuthor,
    BlankName,
    BlankTitle,
    EmptyKey,
    InvalidArgument,
    TitleCharacter,
    TooLong,
)

REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf"})
"""Unicode general categories a title may not contain (but see `ALLOWED_FORMAT`)."""
ALLOWED_FORMAT = frozenset({"\u200c", "\u200d"})
"""Format (Cf) characters a title may contain: the zero-width non-joiner and joiner."""


@dataclass(frozen=True)
class Limits:
    """The most characters a title, a content and an idempotency key may have."""

    title_chars: int = 300
    content_chars: int = 1_000_000
    idempotency_key_chars: int = 200


DEFAULT_LIMITS = Limits()
NAME_CHARS = 300
"""The most characters a knowledge base's name may have."""
"""kbes's limits, where no settings say otherwise."""

ENV_VARS = {
    "title_chars": "KBES_MAX_TITLE_CHARS",
    "content_chars": "KBES_MAX_CONTENT_CHARS",
    "idempotency_key_chars": "KBES_MAX_IDEMPOTENCY_KEY_CHARS",
}
"""The environment variable that sets each limit."""


def encodes(text: str) -> bool:
    """Whether `text` is Unicode text (has a UTF-8 form): not so with a lone surrogate, which
    JSON can escape and Python keeps for a file name's bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _over_limit(field: str, text: str, limit: str, limits: Limits) -> TooLong | None:
    """The one length check: the refusal names the setting that raises the limit, so each
    door can tell an operator who hits it the fix."""
    chars = getattr(limits, limit)
    if len(text) > chars:
        return TooLong(field, len(text), chars, ENV_VARS[limit])
    return None


def title_problem(title: str, limits: Limits = DEFAULT_LIMITS) -> InvalidArgument | None:
    """What is wrong with `title` under the title rule (a fact to raise), or None if nothing
    is."""
    if not title.strip():
        return BlankTitle()
    return _line_problem("title", title, limits)


def name_problem(name: str) -> InvalidArgument | None:
    """What is wrong with a knowledge base's `name` under the title rule, or None."""
    if not name.strip():
        return BlankName()
    if len(name) > NAME_CHARS:
        return TooLong("name", len(name), NAME_CHARS, "")
    return _refused_character("name", name)


AUTHOR_CHARS = 200
"""The longest author name (a person's, a token's, a client's declared name and version)."""


def author_problem(name: str, field: str = "author") -> InvalidArgument | None:
    """What is wrong with an author's `name` under the title rule, or None; the refusal names
    `field`, where the name came from (`--author`, `KBES_AUTHOR`)."""
    if not name.strip():
        return BlankAuthor(field)
    if len(name) > AUTHOR_CHARS:
        return TooLong(field, len(name), AUTHOR_CHARS, "")
    return _refused_character(field, name)


def _line_problem(field: str, text: str, limits: Limits) -> InvalidArgument | None:
    """The title rule past blankness: the length limit, then no refused character."""
    if too_long := _over_limit(field, text, "title_chars", limits):
        return too_long
    return _refused_character(field, text)


def _refused_character(field: str, text: str) -> InvalidArgument | None:
    for position, char in enumerate(text):
        if char in ALLOWED_FORMAT:
            continue
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            return TitleCharacter(char, category, position, field)
    return None


def _refuse(problem: InvalidArgument | None) -> None:
    if problem is not None:
        raise problem


def require_title(title: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """`title` if it follows the title rule; an `invalid_argument` naming `title` otherwise."""
    _refuse(title_problem(title, limits))
    return title


def require_name(name: str) -> str:
    """`name` if it follows the title rule; an `invalid_argument` naming `name` otherwise."""
    _refuse(name_problem(name))
    return name


def content_problem(content: str, limits: Limits = DEFAULT_LIMITS) -> InvalidArgument | None:
    return _over_limit("content", content, "content_chars", limits)


def require_content(content: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """`content` if within the limit; `TooLong` naming `content` otherwise."""
    _refuse(content_problem(content, limits))
    return content


def idempotency_key_problem(key: str, limits: Limits = DEFAULT_LIMITS) -> InvalidArgument | None:
    if not key:
        return EmptyKey()
    return _over_limit("idempotency_key", key, "idempotency_key_chars", limits)


def require_idempotency_key(key: str, limits: Limits = DEFAULT_LIMITS) -> str:
    _refuse(idempotency_key_problem(key, limits))
    return key
