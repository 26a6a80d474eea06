"""Who wrote an event: its author, as kbes knows it for certain, never as an agent's tool
arguments claim it.

An `Author` is three words and a flag: what kind of writer it is (`kind`), its name, and how
kbes came to know it (`how`), so a reader can tell a verified name from a declared one:

- a person's command: `person`, named by `--author`, else `KBES_AUTHOR`, else the OS user;
  how: `flag`, `env`, `os`;
- a Python caller: what it passes (`person(name)`: how `api`), else as a person's command;
- an agent over HTTP with `--tokens`: `token`, the token's NAME (never its secret); `bearer`;
- an agent over stdio, or over HTTP on loopback without tokens: `client`, the MCP client's
  `clientInfo` name and version as it declared them; `declared` (`undeclared` without one).

`approved` is True for an agent's edit the user accepted when the server asked (MCP
elicitation, `kbes serve --edits ask`). Events written before kbes recorded authors load with
no author (None): their classes' `upcast_v1_v2`."""

from __future__ import annotations

import getpass
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kbes.domain.limits import AUTHOR_CHARS, REFUSED_CATEGORIES, author_problem

PERSON = "person"
TOKEN = "token"
CLIENT = "client"
KINDS = (PERSON, TOKEN, CLIENT)

AUTHOR_ENV = "KBES_AUTHOR"
"""The environment variable naming the person a command writes as (after `--author`)."""


@dataclass(frozen=True)
class Author:
    """Who wrote an event (see the module): stored with the event, as a small JSON object."""

    kind: str
    name: str
    how: str
    approved: bool = False

    def approving(self) -> Author:
        """The same author, for an edit its user approved when asked."""
        return replace(self, approved=True)

    @property
    def verified(self) -> bool:
        """Whether kbes checked the name (a person's own process, a bearer token), rather than
        recording what an MCP client declared about itself."""
        return self.kind != CLIENT


def person(name: str, how: str = "api", field: str = "author") -> Author:
    """A person named `name` (the title rule's form: one line of visible text, at most
    `AUTHOR_CHARS`); an `InvalidArgument` naming `field` otherwise."""
    problem = author_problem(name.strip(), field)
    if problem is not None:
        raise problem
    return Author(PERSON, name.strip(), how)


def person_running(flag: str | None = None, environ: Mapping[str, str] | None = None) -> Author:
    """The person a command writes as: `flag` (`--author`), else `KBES_AUTHOR`, else the
    operating-system user running the process. A bad flag or variable is refused naming it."""
    if flag is not None:
        return person(flag, "flag", "--author")
    environ = os.environ if environ is None else environ
    named = environ.get(AUTHOR_ENV)
    if named is not None:
        return person(named, "env", AUTHOR_ENV)
    return Author(PERSON, os_user(), "os")


def os_user() -> str:
    """The operating-system user of this process (its uid when it has no name)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no LOGNAME/USER and no passwd entry for the uid
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def token(name: str) -> Author:
    """An agent holding the bearer token named `name` (its NAME in the tokens file)."""
    return Author(TOKEN, name, "bearer")


def client(name: str | None, version: str | None = None) -> Author:
    """An agent's MCP client as it declared itself (`clientInfo`): nothing checks it. Kept to
    one line of visible text within `AUTHOR_CHARS` (refused characters replaced), since the
    client chose it."""
    if not name:
        return Author(CLIENT, "unknown client", "undeclared")
    text = f"{name} {version}" if version else name
    cleaned = "".join(
        "\ufffd" if unicodedata.category(c) in REFUSED_CATEGORIES else c for c in text
    )
    return Author(CLIENT, cleaned.strip()[:AUTHOR_CHARS] or "unknown client", "declared")


def upcast_no_author(state: dict[str, Any]) -> None:
    """Version 1 of every kbes event had no author: it loads as None (eventsourcing's
    upcasting, `upcast_v1_v2` on each event class)."""
    state["author"] = None
