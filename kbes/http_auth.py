"""Bearer tokens for `kbes serve --http --tokens FILE`: the tokens file, the verifier the MCP
SDK's bearer middleware asks, the grants each token narrows the server's to, and the log filter
that keeps the secrets out of every log line. Apart from `kbes.server` because it is a concern of
the HTTP transport alone: the MCP handlers only ask who called and what that caller may touch."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from kbes.ids import canonical_id
from kbes.tools.grants import Grants

TOKENS_FILE_HELP = """\
A tokens file has one bearer token per line: NAME TOKEN GRANTS, separated by spaces.
NAME names the caller in logs (tokens are never logged). TOKEN is the secret itself (at least
16 characters, no spaces), or sha256:HEX of it so the file holds no secret. GRANTS is '*' (every
knowledge base the server is granted) or a comma-separated list of knowledge-base ids. Blank
lines and lines starting with '#' are ignored."""

MIN_TOKEN_LENGTH = 16


class TokensFileError(ValueError):
    """The tokens file cannot be used; the message names the line."""


@dataclass(frozen=True)
class TokenHolder:
    """Who holds a bearer token, and which knowledge bases it may touch (None: all of the
    server's)."""

    name: str
    grants: Grants


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens from a tokens file, kept as SHA-256 digests (the lookup never compares
    secrets character by character)."""

    holders: Mapping[str, TokenHolder]
    """sha256 hex digest of the token -> its holder."""
    secrets: frozenset[str]
    """The plaintext tokens the file held, only so that logs can redact them."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokens:
        """Parse a tokens file (see `TOKENS_FILE_HELP`)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise TokensFileError(f"cannot read tokens file {os.fspath(path)!r}: {e}") from e
        holders: dict[str, TokenHolder] = {}
        names: set[str] = set()
        secrets: set[str] = set()
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{os.fspath(path)}, line {number}"
            parts = line.split()
            if len(parts) != 3:
                raise TokensFileError(
                    f"{where}: expected NAME TOKEN GRANTS (3 fields, separated by spaces), "
                    f"found {len(parts)}"
                )
            name, token, grants_text = parts
            if name in names:
                raise TokensFileError(f"{where}: the name {name!r} is used twice")
            names.add(name)
            if token.startswith("sha256:"):
                digest = token.removeprefix("sha256:").lower()
                if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                    raise TokensFileError(f"{where}: sha256: must be followed by 64 hex digits")
            else:
                if len(token) < MIN_TOKEN_LENGTH:
                    raise TokensFileError(
                        f"{where}: the token of {name!r} is shorter than {MIN_TOKEN_LENGTH} "
                        "characters; make one with: "
                        "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
                    )
                digest = token_digest(token)
                secrets.add(token)
            if digest in holders:
                raise TokensFileError(f"{where}: the same token is listed twice")
            holders[digest] = TokenHolder(name=name, grants=_parse_grants(grants_text, where))
        if not holders:
            raise TokensFileError(f"{os.fspath(path)}: no tokens. {TOKENS_FILE_HELP}")
        return cls(holders=holders, secrets=frozenset(secrets))

    def holder(self, token: str) -> TokenHolder | None:
        return self.holders.get(token_digest(token))


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _parse_grants(text: str, where: str) -> Grants:
    if text == "*":
        return None
    grants = set()
    for item in text.split(","):
        kb = canonical_id(item)
        if kb is None:
            raise TokensFileError(f"{where}: {item!r} is not a knowledge-base id (or '*')")
        grants.add(kb)
    return frozenset(grants)


def readable_by_others(path: str | os.PathLike[str]) -> bool:
    """Whether users other than the owner may read the file (a secret should not be)."""
    try:
        return bool(os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        return False


class TokensFileVerifier:
    """The SDK's `TokenVerifier` over a tokens file: the access token names the holder, never
    carries the secret."""

    def __init__(self, tokens: Tokens) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        holder = self._tokens.holder(token)
        if holder is None:
            return None
        return AccessToken(token=f"<token of {holder.name}>", client_id=holder.name, scopes=[])


class RedactTokens(logging.Filter):
    """Replace every known token in a log record with `[token]`, whichever library logged it."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        redacted = message
        for secret in self._secrets:
            redacted = redacted.replace(secret, "[token]")
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def narrow(server: Grants, token: Grants) -> Grants:
    """What a caller may touch: the token's grants within the server's."""
    if token is None:
        return server
    if server is None:
        return token
    return token & server
