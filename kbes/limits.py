"""The domain's limits on what an article may hold, and the one title rule.

Every door (an agent's edit, `kbes article add/save`, `kbes import`) ends in the `Article`
aggregate, which applies these checks, so no door can store what another cannot write back. The
agent tools' JSON schemas are generated from the same `LIMITS`, so the advertised contract and
the enforced one agree.

The limits are read once, when kbes starts, from the environment (docs/operations.md):
`KBES_MAX_TITLE_CHARS`, `KBES_MAX_CONTENT_CHARS`, `KBES_MAX_IDEMPOTENCY_KEY_CHARS`.

The title rule: not blank; no character a terminal or a table would read as structure or that
hides what follows. Refused are the Unicode categories Cc (controls: NUL, tab, newline, DEL...),
Cs (lone surrogates), Zl and Zp (line and paragraph separators, which `str.splitlines` splits
on), and Cf (format characters: bidi overrides such as U+202E, zero-width spaces, the BOM), except
U+200C and U+200D (zero-width non-joiner and joiner), which Persian, Indic scripts and emoji
sequences need to be spelled at all."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from kbes.errors import InvalidArgument

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

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Limits:
        """The defaults, each overridden by its environment variable if set."""
        values: dict[str, int] = {}
        for name, variable in ENV_VARS.items():
            text = environ.get(variable)
            if text is None or not text.strip():
                continue
            try:
                value = int(text)
            except ValueError:
                value = 0
            if value < 1:
                raise ValueError(f"{variable}={text!r}: give a whole number of characters, >= 1")
            values[name] = value
        return cls(**values)


ENV_VARS = {
    "title_chars": "KBES_MAX_TITLE_CHARS",
    "content_chars": "KBES_MAX_CONTENT_CHARS",
    "idempotency_key_chars": "KBES_MAX_IDEMPOTENCY_KEY_CHARS",
}
"""The environment variable that sets each limit."""

try:
    LIMITS = Limits.from_env(os.environ)
    """The limits of this process."""
except ValueError as e:
    # Read while kbes is imported, before any command can report it: a clear line and exit 1,
    # not a traceback, for the operator who mistyped the variable.
    raise SystemExit(f"kbes: {e}") from None


def encodes(text: str) -> bool:
    """Whether `text` is Unicode text (has a UTF-8 form): not so with a lone surrogate, which
    JSON can escape and Python keeps for a file name's bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _over_limit(what: str, text: str, limit: str) -> str | None:
    """The one wording of every length refusal, naming the variable that raises the limit, so
    an operator who hits it learns the fix from the message."""
    chars = getattr(LIMITS, limit)
    if len(text) > chars:
        return f"{what} is {len(text)} characters; the limit is {chars} ({ENV_VARS[limit]})"
    return None


def title_problem(title: str) -> str | None:
    """What is wrong with `title` under the title rule, or None if nothing is."""
    if not title.strip():
        return "the title is blank; give a few words saying what the article is about"
    if too_long := _over_limit("the title", title, "title_chars"):
        return too_long
    for position, char in enumerate(title):
        if char in ALLOWED_FORMAT:
            continue
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            return (
                f"the title has the control or format character U+{ord(char):04X} "
                f"(category {category}) at position {position}; titles are one line of "
                "visible text, so remove it"
            )
    return None


def _refuse(problem: str | None, field: str) -> None:
    """Raise `problem`, if any, as `invalid_argument` naming `field`: one wording for every
    limit, so a caller learns which argument to fix whichever check failed."""
    if problem is not None:
        raise InvalidArgument(problem, field=field)


def require_title(title: str) -> str:
    """`title` if it follows the title rule; `invalid_argument` naming `title` otherwise."""
    _refuse(title_problem(title), "title")
    return title


def content_problem(content: str) -> str | None:
    return _over_limit("the content", content, "content_chars")


def require_content(content: str) -> str:
    """`content` if within the limit; `invalid_argument` naming `content` otherwise."""
    _refuse(content_problem(content), "content")
    return content


def idempotency_key_problem(key: str) -> str | None:
    if not key:
        return "the idempotency key is empty; pass a key unique to this change, e.g. a UUID"
    return _over_limit("the idempotency key", key, "idempotency_key_chars")


def require_idempotency_key(key: str) -> str:
    _refuse(idempotency_key_problem(key), "idempotency_key")
    return key
