"""Bearer tokens for `kbes serve --http --tokens FILE`: the verifier the MCP SDK's bearer
middleware asks, the grants each token narrows the server's to, and the log filter that keeps
the secrets out of every log line. The file itself, and its reading again when it changes, are
`kbes.server.tokens_file`'s (names re-exported here). Apart from `kbes.server.mcp_server` because it
is a concern of the HTTP transport alone: the MCP handlers only ask who called and what that
caller may touch."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from mcp.server.auth.provider import AccessToken

from kbes.server.tokens_file import (
    TOKENS_FILE_HELP,
    TokenHolder,
    Tokens,
    TokensFile,
    TokensFileError,
    readable_by_others,
    token_digest,
)
from kbes.tools.grants import Grants

__all__ = [
    "TOKENS_FILE_HELP",
    "RedactTokens",
    "TokenHolder",
    "Tokens",
    "TokensFile",
    "TokensFileError",
    "TokensFileVerifier",
    "narrow",
    "readable_by_others",
    "token_digest",
]


class TokensFileVerifier:
    """The SDK's `TokenVerifier` over a tokens file: the access token names the holder, never
    carries the secret. Asked at every HTTP request, so a `TokensFile` is looked at each time."""

    def __init__(self, tokens: Tokens | TokensFile) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        holder = self._tokens.holder(token)
        if holder is None:
            return None
        return AccessToken(token=f"<token of {holder.name}>", client_id=holder.name, scopes=[])


class RedactTokens(logging.Filter):
    """Replace every known token in a log record with `[token]`, whichever library logged it.
    `secrets` may be a function, asked at each record, so that tokens a reloaded file adds in
    plaintext are redacted too."""

    def __init__(self, secrets: Iterable[str] | Callable[[], Iterable[str]]) -> None:
        super().__init__()
        if callable(secrets):
            self._secrets = secrets
        else:
            fixed = tuple(secrets)
            self._secrets = lambda: fixed

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = [s for s in self._secrets() if s]
        if not secrets:
            return True
        message = record.getMessage()
        redacted = message
        for secret in secrets:
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
