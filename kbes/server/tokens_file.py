"""The tokens file of `kbes serve --http --tokens FILE`: its format, the tokens it holds, and the
file as a running server watches it, read again at the first request after it changes so that
`kbes token add` and `kbes token remove` take effect without a restart. Apart from
`kbes.server.http_auth` because `kbes token` reads and writes the same format, and must not pay
for the MCP SDK's import."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbes.tools.grants import BadGrantList, Grants, parse_grant_list

if TYPE_CHECKING:
    from kbes.store.application import KnowledgeBaseStore

logger = logging.getLogger(__name__)

TOKENS_FILE_HELP = """\
A tokens file has one bearer token per line: NAME TOKEN GRANTS, separated by spaces.
NAME names the caller in logs (tokens are never logged). TOKEN is the secret itself (at least
16 characters, no spaces), or sha256:HEX of it so the file holds no secret. GRANTS is '*' (every
knowledge base the server is granted) or a comma-separated list of knowledge-base ids. Blank
lines and lines starting with '#' are ignored. `kbes token add` writes such lines."""

MIN_TOKEN_LENGTH = 16
HASHED = "sha256:"


class TokensFileError(ValueError):
    """The tokens file cannot be used; the message names the line."""


@dataclass(frozen=True)
class TokenHolder:
    """Who holds a bearer token, and which knowledge bases it may touch (None: all of the
    server's)."""

    name: str
    grants: Grants


@dataclass(frozen=True)
class TokenLine:
    """One token's line of a tokens file, as read."""

    number: int
    name: str
    digest: str
    """sha256 hex digest of the token."""
    secret: str | None
    """The token itself when the line holds it in plaintext; None for a `sha256:` line."""
    grants: Grants
    grants_text: str
    """GRANTS as the line writes it."""


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_line(line: str, number: int, source: str) -> TokenLine | None:
    """The token a line holds; None for a blank line or a comment."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    where = f"{source}, line {number}"
    parts = line.split()
    if len(parts) != 3:
        raise TokensFileError(
            f"{where}: expected NAME TOKEN GRANTS (3 fields, separated by spaces), "
            f"found {len(parts)}"
        )
    name, token, grants_text = parts
    secret: str | None = None
    if token.startswith(HASHED):
        digest = token.removeprefix(HASHED).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise TokensFileError(f"{where}: sha256: must be followed by 64 hex digits")
    else:
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokensFileError(
                f"{where}: the token of {name!r} is shorter than {MIN_TOKEN_LENGTH} "
                "characters; make one with: kbes token add NAME --grant KB_ID"
            )
        digest, secret = token_digest(token), token
    try:
        grants = parse_grant_list(grants_text)
    except BadGrantList as e:
        raise TokensFileError(f"{where}: {e}") from None
    return TokenLine(number, name, digest, secret, grants, grants_text)


def parse_lines(text: str, source: str) -> tuple[list[TokenLine], list[str]]:
    """Every token line of a tokens file's text, and what is wrong with the others, one
    message per line (a later line reusing a name or a token is wrong, not the first)."""
    found: list[TokenLine] = []
    problems: list[str] = []
    names: set[str] = set()
    digests: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            token = parse_line(line, number, source)
        except TokensFileError as e:
            problems.append(str(e))
            continue
        if token is None:
            continue
        where = f"{source}, line {number}"
        if token.name in names:
            problems.append(f"{where}: the name {token.name!r} is used twice")
        elif token.digest in digests:
            problems.append(f"{where}: the same token is listed twice")
        else:
            names.add(token.name)
            digests.add(token.digest)
            found.append(token)
    return found, problems


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens from a tokens file, kept as SHA-256 digests (the lookup never compares
    secrets character by character)."""

    holders: Mapping[str, TokenHolder]
    """sha256 hex digest of the token -> its holder."""
    secrets: frozenset[str]
    """The plaintext tokens the file held, only so that logs can redact them."""

    @classmethod
    def of(cls, lines: Sequence[TokenLine]) -> Tokens:
        return cls(
            holders={line.digest: TokenHolder(line.name, line.grants) for line in lines},
            secrets=frozenset(line.secret for line in lines if line.secret),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokens:
        """Parse a tokens file (see `TOKENS_FILE_HELP`), refusing it whole if any line is
        wrong or it holds no token: what a server checks as it starts."""
        return cls.parse(read_text(path), os.fspath(path))

    @classmethod
    def parse(cls, text: str, source: str) -> Tokens:
        """`load`, of a tokens file's text."""
        lines, problems = parse_lines(text, source)
        if problems:
            raise TokensFileError(problems[0])
        if not lines:
            raise TokensFileError(f"{source}: no tokens. {TOKENS_FILE_HELP}")
        return cls.of(lines)

    def holder(self, token: str) -> TokenHolder | None:
        return self.holders.get(token_digest(token))

    def named(self, name: str) -> TokenHolder | None:
        """The holder whose line has this NAME (what an access token carries)."""
        return next((h for h in self.holders.values() if h.name == name), None)


def read_text(path: str | os.PathLike[str]) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TokensFileError(f"cannot read tokens file {os.fspath(path)!r}: {e}") from e


def readable_by_others(path: str | os.PathLike[str]) -> bool:
    """Whether users other than the owner may read the file (a secret should not be)."""
    try:
        return bool(os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        return False


def grant_problems(
    tokens: Tokens, store: KnowledgeBaseStore, grants: Grants
) -> list[tuple[TokenHolder, str]]:
    """Each token whose GRANTS name a knowledge base that does not exist, or that the server
    is not granted, with what is wrong: a typo that would otherwise answer not_found to every
    call of that token."""
    store.catch_up()
    problems = []
    for holder in tokens.holders.values():
        for kb in sorted(holder.grants or ()):
            if store.knowledge_base(kb) is None:
                problems.append(
                    (
                        holder,
                        f"token {holder.name!r} grants {kb}, which is not a knowledge base in "
                        "this database",
                    )
                )
                break
            if grants is not None and kb not in grants:
                problems.append(
                    (
                        holder,
                        f"token {holder.name!r} grants {kb}, which the server is not granted; "
                        f"add --grant {kb}",
                    )
                )
                break
    return problems


Check = Callable[[Tokens], list[tuple[TokenHolder, str]]]
"""What a server asks of the tokens it reads: the tokens it must refuse, and why."""


SETTLING_NS = 2_000_000_000
"""How long after its last change the file is read at every request whatever its stamp says:
a file system's clock may be too coarse to tell two quick writes of the same size apart."""


def _stamp(path: str) -> tuple[int, int, int] | None:
    """What changes when the file does: a new inode (an atomic replace, as `kbes token`
    writes), a new size or a new modification time (an edit in place)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class TokensFile:
    """The tokens file a running server serves from: the tokens it holds now, read again when
    the file changes.

    `holder(token)`, which the bearer middleware calls for every HTTP request, looks at the
    file (one `stat`) and reads it again if it changed, so a token added or removed counts from
    the next request on. Everything else (the caller's grants by `named`, the log filter's
    `secrets`) reads the same snapshot, the one the last request was checked against.

    A changed file is taken line by line: a line that is wrong, or a token whose GRANTS `check`
    refuses, is left out with a warning in the server's log, and the other tokens are served,
    so a typo locks out one token and a removed line is always revoked. A file that cannot be
    read at all (deleted, unreadable) leaves the last tokens in force, with a warning; a file
    with no tokens left refuses every request."""

    def __init__(self, path: str | os.PathLike[str], check: Check | None = None) -> None:
        """Read the file as a server starts: all of it must be right (`Tokens.load`)."""
        self.path = os.fspath(path)
        self.check = check
        """Set once the store is open: which tokens a changed file may not grant."""
        self._stamp = _stamp(self.path)  # before reading, so no change can slip between
        self._read_at = time.time_ns()
        self._text = read_text(self.path)
        self.tokens = Tokens.parse(self._text, self.path)

    @property
    def holders(self) -> Mapping[str, TokenHolder]:
        return self.tokens.holders

    @property
    def secrets(self) -> frozenset[str]:
        return self.tokens.secrets

    def holder(self, token: str) -> TokenHolder | None:
        return self.refresh().holder(token)

    def named(self, name: str) -> TokenHolder | None:
        return self.tokens.named(name)

    def refresh(self) -> Tokens:
        """The tokens of the file as it is now (read again only if it may have changed)."""
        stamp = _stamp(self.path)
        moved = stamp != self._stamp
        if not moved and not self._settling():
            return self.tokens
        self._stamp, self._read_at = stamp, time.time_ns()
        try:
            text = read_text(self.path)
        except TokensFileError as e:
            if moved:
                logger.warning("%s; the %d token(s) read before still hold", e, len(self.holders))
            return self.tokens
        if text != self._text:
            self._text = text
            self.tokens = self._take(text)
        return self.tokens

    def _settling(self) -> bool:
        return self._stamp is not None and self._read_at - self._stamp[2] < SETTLING_NS

    def _take(self, text: str) -> Tokens:
        """The tokens of a changed file: every right line but those `check` refuses."""
        lines, problems = parse_lines(text, self.path)
        tokens = Tokens.of(lines)
        refused = self.check(tokens) if self.check else []
        if refused:
            names = {holder.name for holder, _ in refused}
            tokens = Tokens.of([line for line in lines if line.name not in names])
            problems += [problem for _, problem in refused]
        for problem in problems:
            logger.warning("tokens file changed: %s; that token is refused", problem)
        if tokens.secrets and readable_by_others(self.path):
            logger.warning("%s holds tokens and other users can read it (chmod 600)", self.path)
        if not tokens.holders:
            logger.warning("%s holds no token now: every request is refused (401)", self.path)
        else:
            logger.info("tokens file %s read again: %d token(s)", self.path, len(tokens.holders))
        return tokens
