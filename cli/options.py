"""Options shared by every command, bundled as decorators (as sqlite-utils does)."""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec

from kbes.application import GRANTS_HINT, KnowledgeBaseStore, open_store
from kbes.errors import KbesError
from kbes.urls import redact

F = TypeVar("F", bound=Callable[..., Any])


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
CREATE_INSTEAD = "create one with `kbes kb create NAME`"
"""How to get a database, for the refusal of a command that needs one."""


class NoDatabase(click.ClickException):
    """--db names no kbes database, and this command does not create one."""

    exit_code = 2


def db_option(func: F) -> F:
    """`--db PATH` (or `KBES_DB`), default `./kbes.sqlite`, for `kbes kb create`, the one
    command that creates the database (a SQLite file, or kbes's tables in PostgreSQL)."""
    return _db_option(
        "The kbes database: a SQLite file (created if missing), or a "
        "postgresql://user:password@host:port/dbname URL for a shared log."
    )(func)


def existing_db_option(func: F) -> F:
    """`--db` for every command but `kbes kb create`: a mistyped path must not silently
    create an empty database and report that it holds nothing."""
    return _db_option(
        "The kbes database, which must exist (nothing is created): a SQLite file, "
        "or the postgresql://user:password@host:port/dbname URL of a shared log."
    )(func)


def _db_option(text: str) -> Callable[[F], F]:
    return click.option(
        "--db",
        "db",
        envvar="KBES_DB",
        default="kbes.sqlite",
        show_default=True,
        show_envvar=True,
        type=click.Path(dir_okay=False),
        help=text,
    )


def json_option(func: F) -> F:
    """`--json`: machine-readable output instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(
        func
    )


def require_database(db: str, *, create: bool = False, instead: str = CREATE_INSTEAD) -> None:
    """Refuse a `--db` that is not a kbes database before `open_store` would make it one: a
    missing file or a PostgreSQL database without kbes's log (unless `create`), a URL of
    another kind, or a SQLite file that holds other tables. `instead` names another way."""
    alternative = f", or {instead}" if instead else ""
    if db.lower().startswith(POSTGRES_SCHEMES):
        if not create:
            require_postgres_log(db, alternative)
        return
    if "://" in db:
        raise NoDatabase(
            f"--db {redact(db)!r}: kbes keeps its log in a SQLite file or in PostgreSQL; give "
            "a file path or a postgresql://user:password@host:port/dbname URL"
        )
    if db == ":memory:" or db.startswith("file:"):
        return
    tables = _sqlite_tables(db) if os.path.isfile(db) else None
    if tables and "stored_events" not in tables:
        raise NoDatabase(
            f"{db!r} is a SQLite database without a kbes log (it holds other tables); point "
            "--db at a kbes database, or at a new file for a new one"
        )
    if not create and not tables:
        what = "an empty database file" if tables is not None else "no kbes database"
        raise NoDatabase(
            f"{what} at {db!r}; pass --db PATH (or set KBES_DB) to an existing database"
            f"{alternative}"
        )


def _sqlite_tables(path: str) -> set[str]:
    """The tables of an existing SQLite file, read-only (an empty file has none)."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as e:
        raise NoDatabase(f"cannot open database {path!r} (--db / KBES_DB): {e}") from None


def require_postgres_log(url: str, alternative: str) -> None:
    """Refuse a PostgreSQL database that cannot be reached or holds no kbes log, before
    `open_store` would create the log's tables there. One direct connection: psycopg says at
    once why it fails (e.g. no such database), where the store's pool retries for 30 s."""
    try:
        import psycopg
        from psycopg import sql

        from kbes.postgres import postgres_env
    except ImportError as e:
        raise NoDatabase(
            f"--db is a PostgreSQL URL, which needs the postgres extra: "
            f"pip install 'kbes[postgres]' ({e})"
        ) from None
    try:
        env = {**os.environ, **postgres_env(url)}
    except ValueError as e:
        raise NoDatabase(f"--db: {e}") from None

    def setting(key: str, default: str = "") -> str:
        # As eventsourcing reads them: the application's prefixed key first.
        return env.get(f"{KnowledgeBaseStore.name.upper()}_{key}", env.get(key, default))

    schema = setting("POSTGRES_SCHEMA").strip() or "public"
    table = f"{KnowledgeBaseStore.name.lower()}_events"
    try:
        with psycopg.connect(
            dbname=setting("POSTGRES_DBNAME"),
            host=setting("POSTGRES_HOST"),
            port=setting("POSTGRES_PORT"),
            user=setting("POSTGRES_USER"),
            password=setting("POSTGRES_PASSWORD"),
            connect_timeout=max(1, round(float(setting("POSTGRES_CONNECT_TIMEOUT", "5")))),
        ) as conn:
            name = sql.Identifier(schema, table).as_string(conn)
            row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    except (psycopg.Error, ValueError) as e:
        message = str(e).strip().replace(url, redact(url))
        raise NoDatabase(
            f"cannot open database {redact(url)!r} (--db / KBES_DB): {message}"
        ) from None
    if not (row and row[0]):
        raise NoDatabase(
            f"no kbes log in database {redact(url)!r} (it has no table {schema}.{table}); "
            "pass --db (or set KBES_DB) to the URL of the database kbes writes its log to"
            f"{alternative}"
        )


@contextmanager
def store_at(
    db: str, *, create: bool = False, instead: str = CREATE_INSTEAD
) -> Iterator[KnowledgeBaseStore]:
    """Open the store for one command (an existing one unless `create`); report its domain
    errors as click errors."""
    require_database(db, create=create, instead=instead)
    try:
        store = open_store(db)
    except Exception as e:  # the database could not be opened at all
        message = str(e).replace(db, redact(db))
        raise NoDatabase(f"cannot open database {redact(db)!r} (--db / KBES_DB): {message}") from e
    try:
        yield store
    except KbesError as e:
        # The agent-facing hint about grants means nothing at a shell, where there are none.
        message = e.message.replace(
            GRANTS_HINT, "`kbes kb list` shows the knowledge bases in this database"
        )
        raise click.ClickException(f"{e.code}: {message}") from None
    finally:
        store.close()


def with_store(func: F) -> F:
    """Add `--db` and pass the open `store` of an existing database to the command."""

    @existing_db_option
    @functools.wraps(func)
    def wrapper(*args: Any, db: str, **kwargs: Any) -> Any:
        with store_at(db) as store:
            return func(*args, store=store, **kwargs)

    return wrapper  # type: ignore[return-value]


def with_new_store(func: F) -> F:
    """Add `--db` and pass an open `store` to the command, creating the database if missing
    (and saying so on stderr, so a mistyped path shows at once)."""

    @db_option
    @functools.wraps(func)
    def wrapper(*args: Any, db: str, **kwargs: Any) -> Any:
        new = not db.lower().startswith(POSTGRES_SCHEMES) and not _sqlite_has_log(db)
        with store_at(db, create=True) as store:
            result = func(*args, store=store, **kwargs)
        if new:
            click.echo(f"created the kbes database {db}", err=True)
        return result

    return wrapper  # type: ignore[return-value]


def _sqlite_has_log(db: str) -> bool:
    if db == ":memory:" or db.startswith("file:") or not os.path.isfile(db):
        return False
    return "stored_events" in _sqlite_tables(db)


def print_json(data: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(data), indent=2).decode())


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain aligned table for people."""
    cells = [[str(h) for h in headers], *[["" if v is None else str(v) for v in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


def echo_err(message: str) -> None:
    click.echo(message, err=True)
