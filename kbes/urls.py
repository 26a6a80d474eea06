"""Database URLs as people see them: never with the password."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

POSTGRES_EXTRA = "pip install '.[postgres]' in kbes's source folder"
"""How to get psycopg 3 and its pool for a postgresql:// --db, kbes being installed from its
source (it is not on a package index)."""

_PASSWORD = re.compile(r"([^/@:\s]+:)[^@/\s:]*@")
"""`user:password@` anywhere in a string that is not a well-formed URL."""


def redact(url: str) -> str:
    """`postgresql://user:secret@host/db` -> `postgresql://user:***@host/db`; paths unchanged."""
    if "://" not in url:
        return _PASSWORD.sub(r"\1***@", url)  # a mistyped URL (`postgresql//u:p@h/db`) too
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
