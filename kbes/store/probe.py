"""Whether a database is a kbes database, asked before `open_store` would make it one: a missing
file or a PostgreSQL database without kbes's log, a URL of another kind, a SQLite file of some
other program. The answers are facts (`Refused` and its kinds), which the CLI words for people;
the tables asked about are the recorders' own (`EVENTS_TABLE` of kbes.store.sqlite and
kbes.store.postgres)."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

from kbes.store.postgres_url import postgres_env, setting
from kbes.store.settings import Settings
from kbes.store.sqlite import EVENTS_TABLE, FEED_TABLE
from kbes.store.urls import MISTYPED_URL, redact
from kbes.store.views_file import views_built_from

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Refused(Exception):
    """A database kbes will not open as asked; `database` as people may see it (redacted)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    """Each kind of refusal is a dataclass (below), so `dataclasses.fields` reads its facts."""

    def __str__(self) -> str:
        fields = dataclasses.fields(self)
        facts = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields)
        return f"{type(self).__name__}({facts})"


@dataclasses.dataclass(eq=False)
class MistypedUrl(Refused):
    """A PostgreSQL URL missing the `:` or a `/` after its `scheme`."""

    database: str
    scheme: str


@dataclasses.dataclass(eq=False)
class ForeignUrl(Refused):
    """A URL of a kind of database kbes keeps no log in."""

    database: str


@dataclasses.dataclass(eq=False)
class SqliteUri(Refused):
    """A SQLite `file:` URI (kbes takes file paths); `path` a file path to give instead."""

    database: str
    path: str


@dataclasses.dataclass(eq=False)
class InMemory(Refused):
    """An in-memory SQLite database, which vanishes when the process ends."""

    database: str


@dataclasses.dataclass(eq=False)
class ForeignSqlite(Refused):
    """A SQLite file that holds other tables and no kbes log."""

    database: str


@dataclasses.dataclass(eq=False)
class ForeignLog(Refused):
    """A SQLite file holding another eventsourcing application's log (its events table has
    kbes's name, and events of other topics)."""

    database: str


@dataclasses.dataclass(eq=False)
class Missing(Refused):
    """No kbes database where one must exist: no file, or an empty one."""

    database: str
    empty_file: bool


@dataclasses.dataclass(eq=False)
class CannotOpen(Refused):
    """The database cannot be opened; `reason` is the driver's, on one line, redacted."""

    database: str
    reason: str


@dataclasses.dataclass(eq=False)
class PostgresExtraMissing(Refused):
    """A PostgreSQL URL in an installation without psycopg; `reason` says how to install it."""

    reason: str


@dataclasses.dataclass(eq=False)
class BadPostgresUrl(Refused):
    """A PostgreSQL URL kbes cannot read; `reason` names the part."""

    reason: str


@dataclasses.dataclass(eq=False)
class SchemaDenied(Refused):
    """The role may not use the schema (nor create in it, if `create`)."""

    database: str
    role: str
    schema: str
    create: bool


@dataclasses.dataclass(eq=False)
class NoSchema(Refused):
    """The schema kbes's log would be created in does not exist."""

    database: str
    role: str
    schema: str


@dataclasses.dataclass(eq=False)
class MayNotCreate(Refused):
    """The role may not create kbes's tables in the schema of database `dbname`."""

    role: str
    schema: str
    dbname: str


@dataclasses.dataclass(eq=False)
class ForeignViews(Refused):
    """The views file (`KBES_VIEWS`) holds another log's views, and the database no log yet."""

    views: str
    source: str


@dataclasses.dataclass(eq=False)
class NoPostgresLog(Refused):
    """A PostgreSQL database without kbes's log: no `schema.table`."""

    database: str
    schema: str
    table: str


def require_database(settings: Settings, *, create: bool = False) -> bool:
    """Whether `settings.db` already holds a kbes log; `Refused` if it is not a kbes database
    and (unless `create`) if it holds no log yet."""
    db = settings.db
    if db.lower().startswith(POSTGRES_SCHEMES):
        return require_postgres_log(settings, create=create)
    if MISTYPED_URL.match(db):
        raise MistypedUrl(redact(db), db.split("/", 1)[0].split(":", 1)[0])
    if "://" in db:
        raise ForeignUrl(redact(db))
    if db.lower().startswith("file:"):
        path = db[len("file:") :].split("?", 1)[0]
        if not path or ":memory:" in path:
            path = "kbes.sqlite"
        # SQLite opens with URIs enabled, so `file:typo.sqlite` would be a new database past
        # the "must exist" check.
        raise SqliteUri(db, path)
    if ":memory:" in db or "mode=memory" in db:
        raise InMemory(db)
    tables = sqlite_tables(db) if Path(db).is_file() else None
    if tables and EVENTS_TABLE not in tables:
        raise ForeignSqlite(db)
    if tables and FEED_TABLE not in tables and not kbes_events_only(db):
        # Another eventsourcing application's log: its table has kbes's name (issue 35).
        raise ForeignLog(db)
    if not create and not tables:
        raise Missing(db, empty_file=tables is not None)
    return bool(tables)


def kbes_events_only(path: str) -> bool:
    """Whether a log without kbes's feed table is kbes's all the same (one written before the
    feed): it holds events, every one of a kbes topic."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    query = f"SELECT topic LIKE 'kbes.%' FROM {EVENTS_TABLE} GROUP BY topic LIKE 'kbes.%'"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            kinds = {row[0] for row in db.execute(query)}
    except sqlite3.DatabaseError as e:
        raise CannotOpen(path, str(e)) from None
    return kinds == {1}


def sqlite_tables(path: str) -> set[str]:
    """The tables of an existing SQLite file, read-only (an empty file has none)."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as e:
        raise CannotOpen(path, str(e)) from None


def require_postgres_log(settings: Settings, *, create: bool = False) -> bool:
    """Whether the PostgreSQL database of `settings.db` holds kbes's log; `Refused` if it
    cannot be reached, or holds none (unless `create`, when kbes must be able to create it
    there), before `open_store` would create the log's tables. One direct connection: psycopg
    says at once why it fails (e.g. no such database, a wrong password), where the store's pool
    retries for 30 s."""
    url = settings.db
    try:
        # When psycopg or its pool is missing, kbes.store.postgres's error says how to install them.
        from kbes.store.postgres import EVENTS_TABLE as table
    except ImportError as e:
        raise PostgresExtraMissing(str(e)) from None
    import psycopg
    from psycopg import sql

    try:
        env = postgres_env(url, settings)
    except ValueError as e:
        raise BadPostgresUrl(str(e)) from None

    def get(key: str, default: str = "") -> str:
        value = setting(key, env)
        return default if value is None else value

    schema = get("POSTGRES_SCHEMA").strip() or "public"
    database = redact(url)
    try:
        with psycopg.connect(
            dbname=get("POSTGRES_DBNAME"),
            host=get("POSTGRES_HOST"),
            port=get("POSTGRES_PORT"),
            user=get("POSTGRES_USER"),
            password=get("POSTGRES_PASSWORD"),
            connect_timeout=max(1, round(float(get("POSTGRES_CONNECT_TIMEOUT", "5")))),
        ) as conn:
            user = conn.execute("SELECT current_user").fetchone()
            assert user is not None  # a SELECT without FROM returns its one row
            role = str(user[0])
            usage, may_create = conn.execute(
                "SELECT has_schema_privilege(oid, 'USAGE'), has_schema_privilege(oid, 'CREATE') "
                "FROM pg_namespace WHERE nspname = %s",
                (schema,),
            ).fetchone() or (None, None)
            if usage is False:
                raise SchemaDenied(database, role, schema, create)
            exists = False
            if usage is not None:
                found = conn.execute(
                    "SELECT to_regclass(%s) IS NOT NULL",
                    (sql.Identifier(schema, table).as_string(conn),),
                ).fetchone()
                exists = bool(found and found[0])
    except (psycopg.Error, ValueError) as e:
        raise CannotOpen(database, one_line(str(e)).replace(url, database)) from None
    if exists:
        return True
    if not create:
        raise NoPostgresLog(database, schema, table)
    if usage is None:
        raise NoSchema(database, role, schema)
    if not may_create:
        raise MayNotCreate(role, schema, get("POSTGRES_DBNAME"))
    refuse_foreign_views(settings)
    return False


def refuse_foreign_views(settings: Settings) -> None:
    """A new log's views start empty: a views file already built from a log is another log's,
    and would be refused only after the new log's tables were created."""
    source = views_built_from(Path(settings.views)) if settings.views else None
    if source is not None:
        raise ForeignViews(str(settings.views), source)


def sql_name(name: str) -> str:
    """An identifier as it must be typed in psql: quoted unless lower case already (an
    unquoted `Mixed` would name `mixed`)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def one_line(message: str) -> str:
    """A driver's message on one line: psycopg adds the statement and a caret line, or a
    tab-indented hint, below the reason."""
    lines = [line.strip() for line in message.strip().splitlines()]
    kept = [line for line in lines if line and not line.startswith(("LINE ", "^"))]
    return "; ".join(kept)


__all__ = ["Refused", "one_line", "require_database", "sql_name"]
