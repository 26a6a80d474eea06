"""Options shared by every command, bundled as decorators (as sqlite-utils does)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
import msgspec

from kbes.application import KnowledgeBaseStore, open_store
from kbes.errors import KbesError
from kbes.urls import redact

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    """`--db PATH` (or `KBES_DB`), default `./kbes.sqlite`, for commands that create the
    database (a SQLite file, or kbes's tables in PostgreSQL) when it is missing."""
    return _db_option(
        "The kbes database: a SQLite file (created if missing), or a "
        "postgresql://user:password@host:port/dbname URL for a shared log."
    )(func)


def existing_db_option(func: F) -> F:
    """`--db` for read-only commands (`kbes audit`, `kbes log export`), which refuse a missing
    database rather than create an empty one and report that it holds nothing."""
    return _db_option(
        "The kbes database to read, which must exist (nothing is created): a SQLite file, "
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


@contextmanager
def store_at(db: str) -> Iterator[KnowledgeBaseStore]:
    """Open the store for one command; report its domain errors as click errors."""
    try:
        store = open_store(db)
    except Exception as e:  # the database could not be opened at all
        message = str(e).replace(db, redact(db))
        raise click.ClickException(
            f"cannot open database {redact(db)!r} (--db / KBES_DB): {message}"
        ) from e
    try:
        yield store
    except KbesError as e:
        raise click.ClickException(f"{e.code}: {e.message}") from None
    finally:
        store.close()


def with_store(func: F) -> F:
    """Add `--db` and pass an open `store` to the command."""

    @db_option
    @functools.wraps(func)
    def wrapper(*args: Any, db: str, **kwargs: Any) -> Any:
        with store_at(db) as store:
            return func(*args, store=store, **kwargs)

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


def echo_err(message: str) -> None:
    click.echo(message, err=True)
