"""Database URLs as people see them: never with the password."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

MISTYPED_URL = re.compile(r"(?i)(postgres(?:ql)?(?://|:(?!//))/*)([^:@/]*:)?(.*)@")
"""`postgresql//user:pass@host/db` or `postgres:/...@...`: a URL missing its `:` or a `/`
(with an `@`, so not a file path); groups: the scheme part, `user:`, the password."""


def redact(url: str) -> str:
    """`postgresql://user:secret@host/db` -> `postgresql://user:***@host/db`; paths unchanged."""
    if "://" not in url:
        mistyped = MISTYPED_URL.match(url)
        if mistyped and mistyped.group(2):  # the password is all up to the last `@`
            return f"{mistyped.group(1)}{mistyped.group(2)}***@{url[mistyped.end() :]}"
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
