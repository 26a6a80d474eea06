"""Credentials in URLs kept out of the log. A client may put its token in the query string
(`GET /mcp?access_token=...`); kbes never reads it from there (only `Authorization: Bearer`).
kbes's access-log format prints the path without the query string, and this filter is the
second guard, for any record: `RedactTokens` can replace only the secrets it knows, and a token
stored as `sha256:` is not known in the clear, so this filter masks by position instead: every
query value of an access-log line (kbes's one path, `/mcp`, takes no query parameter, so
nothing is lost), and the values of credential-named parameters (`access_token=`, `key=`,
`password=`...) in any other record. Free of the MCP SDK, so `kbes serve` sets it up before
the SDK's slow import."""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "hypercorn.access"
MASK = "[redacted]"

_ANY_VALUE = re.compile(r"(?P<name>[?&;][^=&;\s\"'#?]*=)[^&;\s\"'#]*")
_CREDENTIAL_VALUE = re.compile(
    r"(?P<name>[?&;](?:[a-z0-9]+[_.-])*"
    r"(?:token|key|apikey|auth|authorization|bearer|password|passwd|pwd|secret|signature|"
    r"sig|jwt|credential|credentials|code|session)=)[^&;\s\"'#]*",
    re.IGNORECASE,
)


def mask_query(text: str, *, every_value: bool) -> str:
    """`text` with the query values masked: all of them, or only the credential-named ones."""
    pattern = _ANY_VALUE if every_value else _CREDENTIAL_VALUE
    return pattern.sub(lambda m: m.group("name") + MASK, text)


class RedactQueryCredentials(logging.Filter):
    """Mask query-string values in every record that passes the handler (see the module)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "=" not in message:
            return True
        masked = mask_query(message, every_value=record.name == ACCESS_LOGGER)
        if masked != message:
            record.msg, record.args = masked, None
        return True
