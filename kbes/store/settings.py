"""What an operator may set, read once, when a store is opened: the environment and the flags
of one process become one `Settings`, which the store keeps and passes down (its limits to the
aggregates and the tools' schemas, the rest to the persistence it opens). Nothing in kbes reads
the environment at import time, so a bad value is an ordinary `BadSetting` raised where a store
is opened, which each door words for its audience (the CLI as one line).

eventsourcing still reads its own variables (`POSTGRES_*`, `AGGREGATE_CACHE_*`) from the process
environment as the application is built, at the same moment; docs/operations.md lists them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kbes.domain.limits import DEFAULT_LIMITS, ENV_VARS, Limits

DB_ENV = "KBES_DB"
DEFAULT_DB = "kbes.sqlite"
LOCK_TIMEOUT_ENV = "KBES_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 30
"""Seconds a write waits for another process's write lock before it is refused as `busy`."""
CONNECT_TIMEOUT_ENV = "POSTGRES_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 3
"""Seconds a call waits for a connection to a PostgreSQL log before it is refused as
`unavailable` (eventsourcing's own setting, whose default is 30, tried 10 times)."""
STARTUP_TIMEOUT_ENV = "KBES_STARTUP_TIMEOUT"
DEFAULT_STARTUP_TIMEOUT = 10
"""Seconds opening a store waits for its first connection to a PostgreSQL log, in one wait:
not shared over eventsourcing's tries as a call's `POSTGRES_CONNECT_TIMEOUT` is, since on a
busy machine a new connection can take longer than one try's share (0.12 s by default)."""
SYNCHRONOUS_ENV = "KBES_SQLITE_SYNCHRONOUS"
SYNCHRONOUS_MODES = ("FULL", "NORMAL", "OFF", "EXTRA")
SEARCH_ENV = "KBES_SEARCH"
SEARCH_MODES = ("keyword", "hybrid")
"""How search ranks: by words alone, or words and meaning fused (docs/search.md)."""
VIEWS_ENV = "KBES_VIEWS"
HNSW_THRESHOLD_ENV = "KBES_HNSW_THRESHOLD"
DEFAULT_HNSW_THRESHOLD = 20_000
KEYWORD_FOLDER_ENV = "KBES_KEYWORD_FOLDER_FROM"
DEFAULT_KEYWORD_FOLDER_FROM = 100
"""Path of this process's local views file (SQLite) when the log is in PostgreSQL."""

PASSED_ON = ("POSTGRES_", "KBES_POSTGRES_")
"""Prefixes of the variables kept in `Settings.environ` for the PostgreSQL log."""
PASSED_ON_NAMES = ("PGUSER", "PGPASSWORD", "XDG_CACHE_HOME")
"""libpq's fallbacks for a URL without user or password, and the views' cache folder."""


PIPELINE_WRITE_CHARS = 1_000_000
"""`Settings.write_batch_chars` for a PostgreSQL log."""


def is_postgres_url(db: str) -> bool:
    return db.lower().startswith(("postgresql://", "postgres://"))


class BadSetting(ValueError):
    """An environment variable or flag holds a value kbes cannot use."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


@dataclass(frozen=True)
class Settings:
    """One process's settings for one store; the defaults are kbes's."""

    db: str = DEFAULT_DB
    """A SQLite file path or a postgresql:// URL (`--db`, `KBES_DB`)."""
    limits: Limits = DEFAULT_LIMITS
    """What an article may hold (`KBES_MAX_*`): applied and advertised alike."""
    lock_timeout: int = DEFAULT_LOCK_TIMEOUT
    """Whole seconds a SQLite write waits for another process's lock (`KBES_LOCK_TIMEOUT`)."""
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
    """Whole seconds a call waits for a connection to a PostgreSQL log, then `unavailable`
    (`POSTGRES_CONNECT_TIMEOUT` or `KBES_POSTGRES_CONNECT_TIMEOUT`; the URL's
    `connect_timeout=` wins)."""
    startup_timeout: int = DEFAULT_STARTUP_TIMEOUT
    """Whole seconds opening a store waits for its first connection to a PostgreSQL log
    (`KBES_STARTUP_TIMEOUT`), or `connect_timeout` if that is longer."""
    synchronous: str = "FULL"
    """SQLite's `synchronous` pragma for the log (`KBES_SQLITE_SYNCHRONOUS`)."""
    views: str | None = None
    """The local views file beside a PostgreSQL log (`KBES_VIEWS`); None: a cache file."""
    search: str = "keyword"
    """`keyword` or `hybrid` (`--search`, `KBES_SEARCH`); hybrid needs the `semantic` extra."""
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD
    """Vectors in one knowledge base from which hybrid search asks its HNSW index instead of
    searching exactly (`KBES_HNSW_THRESHOLD`; docs/search.md)."""
    keyword_folder_from: int = DEFAULT_KEYWORD_FOLDER_FROM
    """Articles in one knowledge base from which its keyword index has a folder beside the
    views instead of living in each process's memory (`KBES_KEYWORD_FOLDER_FROM`; 0: every
    index in a folder; docs/search.md)."""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    """The variables a PostgreSQL log takes from the environment (`PASSED_ON`), as read."""

    @property
    def write_batch_chars(self) -> int | None:
        """The most characters of titles and contents one write of a large import carries,
        or None for one transaction whatever its size. eventsourcing writes to PostgreSQL
        through psycopg's pipeline, which stops sending once its last command is queued even
        when the socket has not taken all of it (psycopg/psycopg#685): a write larger than the
        socket buffers then waits for ever, holding the events table's lock. Measured on this
        machine's loopback: 5 MB of events in one write always went, 10 MB hung."""
        return PIPELINE_WRITE_CHARS if is_postgres_url(self.db) else None

    def __post_init__(self) -> None:
        if self.lock_timeout < 1:
            # SQLite takes no zero here (eventsourcing reads 0 as its own default).
            raise _bad_seconds(LOCK_TIMEOUT_ENV, str(self.lock_timeout), DEFAULT_LOCK_TIMEOUT)
        if self.connect_timeout < 1:
            raise _bad_seconds(
                CONNECT_TIMEOUT_ENV, str(self.connect_timeout), DEFAULT_CONNECT_TIMEOUT
            )
        if self.startup_timeout < 1:
            raise _bad_seconds(
                STARTUP_TIMEOUT_ENV, str(self.startup_timeout), DEFAULT_STARTUP_TIMEOUT
            )
        synchronous_mode(self.synchronous)
        if self.search not in SEARCH_MODES:
            raise _bad_search(self.search)
        if self.hnsw_threshold < 1:
            raise _bad_hnsw_threshold(str(self.hnsw_threshold))
        if self.keyword_folder_from < 0:
            raise _bad_keyword_folder_from(str(self.keyword_folder_from))

    @classmethod
    def read(
        cls,
        environ: Mapping[str, str],
        *,
        db: str | os.PathLike[str] | None = None,
        synchronous: str | None = None,
        views: str | os.PathLike[str] | None = None,
        search: str | None = None,
    ) -> Settings:
        """The settings of `environ` (the process environment), each flag given (not None)
        in place of its variable, which is then not read."""
        if synchronous is None:
            synchronous = environ.get(SYNCHRONOUS_ENV)
        return cls(
            db=os.fspath(db) if db is not None else environ.get(DB_ENV, DEFAULT_DB),
            limits=read_limits(environ),
            lock_timeout=read_lock_timeout(environ.get(LOCK_TIMEOUT_ENV)),
            connect_timeout=read_connect_timeout(environ),
            startup_timeout=read_startup_timeout(environ.get(STARTUP_TIMEOUT_ENV)),
            synchronous=synchronous_mode(synchronous),
            views=os.fspath(views) if views is not None else environ.get(VIEWS_ENV) or None,
            search=search_mode(search if search is not None else environ.get(SEARCH_ENV)),
            hnsw_threshold=read_hnsw_threshold(environ.get(HNSW_THRESHOLD_ENV)),
            keyword_folder_from=read_keyword_folder_from(environ.get(KEYWORD_FOLDER_ENV)),
            environ={
                name: value
                for name, value in environ.items()
                if name.startswith(PASSED_ON) or name in PASSED_ON_NAMES
            },
        )

    def but(
        self,
        *,
        db: str | os.PathLike[str] | None = None,
        synchronous: str | None = None,
        views: str | os.PathLike[str] | None = None,
        search: str | None = None,
    ) -> Settings:
        """These settings with each flag given (not None) in place of its value."""
        given: dict[str, Any] = {}
        if db is not None:
            given["db"] = os.fspath(db)
        if synchronous is not None:
            given["synchronous"] = synchronous_mode(synchronous)
        if views is not None:
            given["views"] = os.fspath(views)
        if search is not None:
            given["search"] = search_mode(search)
        return replace(self, **given) if given else self


def read_limits(environ: Mapping[str, str]) -> Limits:
    """The default limits, each overridden by its environment variable if set."""
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
            raise BadSetting(
                variable, f"{variable}={text!r}: give a whole number of characters, >= 1"
            )
        values[name] = value
    return Limits(**values)


LIMIT_VARIABLES = frozenset(ENV_VARS.values())
"""The variables of `Settings.limits`."""


def read_lock_timeout(value: str | None) -> int:
    """The lock timeout in whole seconds: `value`, else the default; at least 1."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = int(text)
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise _bad_seconds(LOCK_TIMEOUT_ENV, text, DEFAULT_LOCK_TIMEOUT)
    return seconds


def _bad_seconds(variable: str, text: str, default: int) -> BadSetting:
    """The one refusal of a setting that must be a whole number of seconds, at least 1."""
    return BadSetting(
        variable,
        f"{variable}={text!r} must be a whole number of seconds, at least 1 (default {default})",
    )


def read_connect_timeout(environ: Mapping[str, str]) -> int:
    """The PostgreSQL connect timeout in whole seconds, as eventsourcing reads its setting
    (the `KBES_`-prefixed variable first), else kbes's default; at least 1."""
    for variable in (f"KBES_{CONNECT_TIMEOUT_ENV}", CONNECT_TIMEOUT_ENV):
        text = (environ.get(variable) or "").strip()
        if text:
            seconds = int(text) if text.isascii() and text.isdigit() else 0
            if seconds < 1:
                raise _bad_seconds(variable, text, DEFAULT_CONNECT_TIMEOUT)
            return seconds
    return DEFAULT_CONNECT_TIMEOUT


def read_startup_timeout(value: str | None) -> int:
    """The PostgreSQL start-up budget in whole seconds: `value`, else the default; at least 1."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_STARTUP_TIMEOUT
    seconds = int(text) if text.isascii() and text.isdigit() else 0
    if seconds < 1:
        raise _bad_seconds(STARTUP_TIMEOUT_ENV, text, DEFAULT_STARTUP_TIMEOUT)
    return seconds


def synchronous_mode(value: str | None) -> str:
    """SQLite's `synchronous` setting named by `value` (any case), FULL if none."""
    mode = (value or "FULL").upper()
    if mode not in SYNCHRONOUS_MODES:
        raise BadSetting(SYNCHRONOUS_ENV, f"{SYNCHRONOUS_ENV} must be FULL, NORMAL, OFF or EXTRA")
    return mode


def search_mode(value: str | None) -> str:
    """The search mode named by `value` (any case), keyword if none."""
    mode = (value or "keyword").strip().lower()
    if mode not in SEARCH_MODES:
        raise _bad_search(value)
    return mode


def read_hnsw_threshold(value: str | None) -> int:
    """The HNSW threshold in vectors: `value`, else the default; at least 1."""
    text = (value or "").strip().replace("_", "")
    if not text:
        return DEFAULT_HNSW_THRESHOLD
    threshold = int(text) if text.isascii() and text.isdigit() else 0
    if threshold < 1:
        raise _bad_hnsw_threshold(value or "")
    return threshold


def _bad_hnsw_threshold(text: str) -> BadSetting:
    return BadSetting(
        HNSW_THRESHOLD_ENV,
        f"{HNSW_THRESHOLD_ENV}={text!r} must be a whole number of vectors, at least 1 "
        f"(default {DEFAULT_HNSW_THRESHOLD:,})",
    )


def read_keyword_folder_from(value: str | None) -> int:
    """Articles from which a keyword index has its folder: `value`, else the default."""
    text = (value or "").strip().replace("_", "")
    if not text:
        return DEFAULT_KEYWORD_FOLDER_FROM
    if not (text.isascii() and text.isdigit()):
        raise _bad_keyword_folder_from(value or "")
    return int(text)


def _bad_keyword_folder_from(text: str) -> BadSetting:
    return BadSetting(
        KEYWORD_FOLDER_ENV,
        f"{KEYWORD_FOLDER_ENV}={text!r} must be a whole number of articles, 0 for every "
        f"knowledge base's index in a folder (default {DEFAULT_KEYWORD_FOLDER_FROM})",
    )


def _bad_search(value: str | None) -> BadSetting:
    return BadSetting(
        SEARCH_ENV, f"{SEARCH_ENV} (--search) must be keyword or hybrid, not {value!r}"
    )


__all__ = ["BadSetting", "Settings"]
