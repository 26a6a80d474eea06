"""Options shared by every command, bundled as decorators (as sqlite-utils does)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec

from kbes.application import KnowledgeBaseStore, open_store
from kbes.errors import ArticleElsewhere, KbesError, KnowledgeBaseNotFound
from kbes.tools.wire import MAX_SEQUENCE
from kbes.urls import MISTYPED_URL, redact

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


class SequenceNumber(click.ParamType):
    """A position in the notification log, as `--after` takes it: a whole number from 0."""

    name = "sequence"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                number = -1
        if not 0 <= number <= MAX_SEQUENCE:
            self.fail(
                f"{value!r} is not a sequence number: give a whole number from 0 (the start of "
                "the log) up to 2**63 - 1, such as the last sequence you saw",
                param,
                ctx,
            )
        return number


SEQUENCE = SequenceNumber()


def json_option(func: F) -> F:
    """`--json`: machine-readable output instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(
        func
    )


def require_database(db: str, *, create: bool = False, instead: str = CREATE_INSTEAD) -> bool:
    """Refuse a `--db` that is not a kbes database before `open_store` would make it one: a
    missing file or a PostgreSQL database without kbes's log (unless `create`), a URL of
    another kind, or a SQLite file that holds other tables. `instead` names another way.
    Returns whether the database already holds a kbes log."""
    alternative = f", or {instead}" if instead else ""
    if db.lower().startswith(POSTGRES_SCHEMES):
        return require_postgres_log(db, alternative, create=create)
    if MISTYPED_URL.match(db):
        scheme = db.split("/", 1)[0].split(":", 1)[0]
        raise NoDatabase(
            f"--db {redact(db)!r} is not a URL: write {scheme}://user:password@host:port/dbname "
            "(a colon and two slashes after the scheme)"
        )
    if "://" in db:
        raise NoDatabase(
            f"--db {redact(db)!r}: kbes keeps its log in a SQLite file or in PostgreSQL; give "
            "a file path or a postgresql://user:password@host:port/dbname URL"
        )
    if db.lower().startswith("file:") or ":memory:" in db or "mode=memory" in db:
        raise NoDatabase(sqlite_uri_refusal(db))
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
    return bool(tables)


def sqlite_uri_refusal(db: str) -> str:
    """Why `db` is refused: SQLite opens with URIs enabled, so `file:typo.sqlite` would be a new
    database past the "must exist" check, and `:memory:` one that vanishes when the command
    ends (with `kb create` reporting it created)."""
    if db.lower().startswith("file:"):
        path = db[len("file:") :].split("?", 1)[0]
        if not path or ":memory:" in path:
            path = "kbes.sqlite"
        return (
            f"--db {db!r} (or KBES_DB) is a SQLite URI, which kbes does not take; "
            f"give a file path, e.g. --db {path}"
        )
    return (
        f"--db {db!r} (or KBES_DB) names an in-memory database, which vanishes when the "
        "command ends; give a file path, e.g. --db kbes.sqlite"
    )


def _sqlite_tables(path: str) -> set[str]:
    """The tables of an existing SQLite file, read-only (an empty file has none)."""
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as e:
        raise NoDatabase(f"cannot open database {path!r} (--db / KBES_DB): {e}") from None


def require_postgres_log(url: str, alternative: str, *, create: bool = False) -> bool:
    """Refuse a PostgreSQL database that cannot be reached or holds no kbes log (unless
    `create`, when kbes must be able to create it there), before `open_store` would create the
    log's tables. One direct connection: psycopg says at once why it fails (e.g. no such
    database, a wrong password), where the store's pool retries for 30 s. Returns whether the
    log exists."""
    try:
        # When psycopg or its pool is missing, kbes.postgres's error says how to install them.
        from kbes.postgres import postgres_env
    except ImportError as e:
        raise NoDatabase(
            f"--db is a PostgreSQL URL, which needs kbes's postgres extra: {e}"
        ) from None
    import psycopg
    from psycopg import sql

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
            role = str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]
            where, who = sql_name(schema), sql_name(role)
            usage, may_create = conn.execute(
                "SELECT has_schema_privilege(oid, 'USAGE'), has_schema_privilege(oid, 'CREATE') "
                "FROM pg_namespace WHERE nspname = %s",
                (schema,),
            ).fetchone() or (None, None)
            if usage is False:
                raise NoDatabase(
                    f"role {role!r} may not use schema {schema!r} of database {redact(url)!r}; "
                    f"GRANT USAGE{', CREATE' if create else ''} ON SCHEMA {where} TO {who}"
                )
            exists = False
            if usage is not None:
                found = conn.execute(
                    "SELECT to_regclass(%s) IS NOT NULL",
                    (sql.Identifier(schema, table).as_string(conn),),
                ).fetchone()
                exists = bool(found and found[0])
    except (psycopg.Error, ValueError) as e:
        message = one_line(str(e)).replace(url, redact(url))
        raise NoDatabase(
            f"cannot open database {redact(url)!r} (--db / KBES_DB): {message}"
        ) from None
    if exists:
        return True
    if create:
        dbname = setting("POSTGRES_DBNAME")
        if usage is None:
            raise NoDatabase(
                f"database {redact(url)!r} has no schema {schema!r} for kbes's log; create it "
                f"(CREATE SCHEMA {where} AUTHORIZATION {who}) or drop ?schema= from the URL"
            )
        if not may_create:
            # Since PostgreSQL 15 only the database's owner may create in `public`.
            owner = (
                f"make the role the database's owner (createdb -O {shlex.quote(role)} "
                f"{shlex.quote(dbname)}, or ALTER DATABASE {sql_name(dbname)} OWNER TO {who}) or "
                if schema == "public"
                else ""
            )
            raise NoDatabase(
                f"role {role!r} may not create kbes's tables in schema {schema!r} of database "
                f"{dbname!r}; {owner}GRANT CREATE ON SCHEMA {where} TO {who}"
            )
        refuse_foreign_views()
        return False
    if not exists:
        raise NoDatabase(
            f"no kbes log in database {redact(url)!r} (it has no table {schema}.{table}); "
            "pass --db (or set KBES_DB) to the URL of the database kbes writes its log to"
            f"{alternative}"
        )
    return True


def sql_name(name: str) -> str:
    """An identifier as it must be typed in psql: quoted unless lower case already (an
    unquoted `Mixed` would name `mixed`)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def refuse_foreign_views() -> None:
    """A new log's views start empty: a KBES_VIEWS file already built from a log is another
    log's, and would be refused only after the new log's tables were created."""
    from kbes.postgres import VIEWS_ENV, views_built_from

    views = os.environ.get(VIEWS_ENV)
    source = views_built_from(Path(views)) if views else None
    if source is not None:
        raise NoDatabase(
            f"{VIEWS_ENV}={views} holds the views of another event log ({source}), and this "
            "database has no kbes log yet; unset it or point it at a new file (nothing was "
            "created)"
        )


def one_line(message: str) -> str:
    """A driver's message on one line: psycopg adds the statement and a caret line, or a
    tab-indented hint, below the reason."""
    lines = [line.strip() for line in message.strip().splitlines()]
    kept = [line for line in lines if line and not line.startswith(("LINE ", "^"))]
    return "; ".join(kept)


@contextmanager
def store_at(
    db: str, *, create: bool = False, instead: str = CREATE_INSTEAD, checked: bool = False
) -> Iterator[KnowledgeBaseStore]:
    """Open the store for one command (an existing one unless `create`; `checked` when the
    caller has just run `require_database`); report its domain errors as click errors."""
    if not checked:
        require_database(db, create=create, instead=instead)
    try:
        store = open_store(db)
    except Exception as e:  # the database could not be opened at all
        message = one_line(str(e)).replace(db, redact(db))
        raise NoDatabase(f"cannot open database {redact(db)!r} (--db / KBES_DB): {message}") from e
    try:
        yield store
    except KnowledgeBaseNotFound as e:
        raise click.ClickException(
            f"{e.code}: no knowledge base {e.knowledge_base_id} is available here; "
            "`kbes kb list` shows the knowledge bases in this database"
        ) from None
    except ArticleElsewhere as e:
        raise click.ClickException(
            f"{e.code}: {e.message}; "
            f"`kbes article list --kb {e.knowledge_base_id}` lists its articles"
        ) from None
    except KbesError as e:
        raise click.ClickException(f"{e.code}: {e.message}") from None
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
        existed = require_database(db, create=True)
        with store_at(db, create=True, checked=True) as store:
            result = func(*args, store=store, **kwargs)
        if not existed:
            what = "log in" if db.lower().startswith(POSTGRES_SCHEMES) else "database"
            click.echo(f"created the kbes {what} {redact(db)}", err=True)
        return result

    return wrapper  # type: ignore[return-value]


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
