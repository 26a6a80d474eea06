"""A PostgreSQL log's URL and settings as eventsourcing's application environment: what
`open_store` hands the application for a `postgresql://` database, and what a probe of that
database connects with."""

from __future__ import annotations

import getpass
from urllib.parse import parse_qsl, unquote, urlsplit

from eventsourcing.utils import get_topic

from kbes.store.settings import STARTUP_TIMEOUT_ENV, VIEWS_ENV, Settings
from kbes.store.urls import redact

URL_SCHEMES = ("postgresql", "postgres")

VIEWS_LOCK_TIMEOUT = "SQLITE_LOCK_TIMEOUT"
"""The key of the environment that gives the local views file its SQLite lock timeout."""

# URL query parameters passed on to eventsourcing's PostgreSQL settings.
_QUERY_SETTINGS = {
    "schema": "POSTGRES_SCHEMA",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "host": "POSTGRES_HOST",
}

_WHOLE_NUMBERS = {"pool_size", "max_overflow", "connect_timeout", "lock_timeout"}
"""eventsourcing reads these with int(); checked here so the error names the URL parameter,
not an environment variable the user never set."""


def postgres_env(url: str, settings: Settings | None = None) -> dict[str, str]:
    """The application environment for a store whose log lives at `url`
    (`postgresql://user:password@host:port/dbname[?schema=...&pool_size=...]`), under
    `settings` (the views file, its lock timeout, and the variables of `Settings.environ`).

    Settings from the URL are written under both the plain and the `KBES_`-prefixed key, so
    they win over any `POSTGRES_*` / `KBES_POSTGRES_*` variables in the process environment;
    settings the URL leaves out (a password, a pool size) may still come from there."""
    settings = settings or Settings()
    parts = urlsplit(url)
    if parts.scheme.lower() not in URL_SCHEMES:
        raise ValueError(
            f"not a PostgreSQL URL (postgresql://user:pass@host:port/dbname): {redact(url)}"
        )
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise ValueError(f"the PostgreSQL URL names no database (…/dbname): {redact(url)}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"the PostgreSQL URL has a bad port: {redact(url)}") from None
    from kbes.store.postgres import KbesPostgresFactory  # psycopg: the `postgres` extra

    found = {
        "PERSISTENCE_MODULE": get_topic(KbesPostgresFactory),
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": unquote(parts.hostname or "") or "localhost",
        "POSTGRES_PORT": str(port or 5432),
    }
    if parts.username:
        found["POSTGRES_USER"] = unquote(parts.username)
    if parts.password is not None:
        found["POSTGRES_PASSWORD"] = unquote(parts.password)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _QUERY_SETTINGS:
            known = ", ".join(sorted(_QUERY_SETTINGS))
            raise ValueError(f"unknown PostgreSQL URL parameter {key!r}; known: {known}")
        if key in _WHOLE_NUMBERS and not (value.isascii() and value.isdigit()):
            raise ValueError(
                f"PostgreSQL URL parameter {key}={value!r} must be a whole number"
                f"{' of seconds' if key.endswith('timeout') else ''}"
            )
        if key == "connect_timeout" and int(value) < 1:
            raise ValueError("PostgreSQL URL parameter connect_timeout must be at least 1 second")
        found[_QUERY_SETTINGS[key]] = value
    # A call waits this long for a connection, then is refused as `unavailable`
    # (kbes.store.postgres.BoundedWaitDatastore); eventsourcing's own default is 30 s.
    timeout = found.get("POSTGRES_CONNECT_TIMEOUT", str(settings.connect_timeout))
    found["POSTGRES_CONNECT_TIMEOUT"] = timeout
    env = {
        **settings.environ,
        **found,
        **{f"KBES_{key}": value for key, value in found.items()},
        VIEWS_LOCK_TIMEOUT: str(settings.lock_timeout),
        STARTUP_TIMEOUT_ENV: str(settings.startup_timeout),
    }
    # eventsourcing insists on a user and a password setting; fall back as libpq would.
    if not setting("POSTGRES_USER", env):
        env["POSTGRES_USER"] = env.get("PGUSER") or getpass.getuser()
    if setting("POSTGRES_PASSWORD", env) is None:
        env["POSTGRES_PASSWORD"] = env.get("PGPASSWORD", "")
    if settings.views is not None:
        env[VIEWS_ENV] = settings.views
    return env


def setting(key: str, env: dict[str, str]) -> str | None:
    """`key` as eventsourcing reads it: the application's prefixed key first."""
    for name in (f"KBES_{key}", key):
        value = env.get(name)
        if value is not None:
            return value
    return None


__all__ = ["URL_SCHEMES", "postgres_env"]
