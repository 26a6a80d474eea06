"""Options shared by every command, bundled as decorators (as sqlite-utils does), and the words
a person reads when a command cannot open its store: a bad setting, or a `--db` the store's
probe (kbes.store.probe) finds is no kbes database."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click
import msgspec

from kbes.cli.refusals import cannot_open, database_refusal, refusal, semantic_missing, words
from kbes.domain.author import AUTHOR_ENV, Author, person_running
from kbes.domain.errors import DomainError, InvalidArgument
from kbes.projections.embedder import SemanticUnavailable
from kbes.store import probe
from kbes.store.application import KnowledgeBaseStore, open_store
from kbes.store.probe import POSTGRES_SCHEMES, one_line
from kbes.store.settings import LIMIT_VARIABLES, BadSetting, Settings
from kbes.store.urls import redact
from kbes.tools.wire import MAX_SEQUENCE

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


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


# click types ParamType by the value it converts to (since click 8.4); kbes takes click 8.1 too,
# where the class is not subscriptable, so only the type checker sees the argument.
if TYPE_CHECKING:
    _IntParamType = click.ParamType[int]
else:
    _IntParamType = click.ParamType


class SequenceNumber(_IntParamType):
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


def read_settings(db: str | None = None, *, synchronous: str | None = None) -> Settings:
    """This command's settings: the environment, `--db`, and a command's own `synchronous`;
    a bad value is one line naming the variable (a limit with exit status 1, as it stops
    every command; the others, which say how to open the database, as a `--db` that cannot
    be opened)."""
    try:
        return Settings.read(os.environ, db=db, synchronous=synchronous)
    except BadSetting as e:
        if e.variable in LIMIT_VARIABLES:
            raise StoppedBySetting(str(e)) from None
        if db is None:
            raise click.ClickException(str(e)) from None
        raise NoDatabase(f"cannot open database {redact(db)!r} (--db / KBES_DB): {e}") from None


class StoppedBySetting(click.ClickException):
    """A setting no command can run with."""

    def show(self, file: Any = None) -> None:
        click.echo(f"kbes: {self.format_message()}", err=True)


def require_database(
    db: str,
    *,
    create: bool = False,
    instead: str = CREATE_INSTEAD,
    settings: Settings | None = None,
) -> bool:
    """Refuse a `--db` that is not a kbes database before `open_store` would make it one: a
    missing file or a PostgreSQL database without kbes's log (unless `create`), a URL of
    another kind, or a SQLite file that holds other tables (kbes.store.probe). `instead` names
    another way. Returns whether the database already holds a kbes log."""
    try:
        return probe.require_database(settings or read_settings(db), create=create)
    except probe.Refused as e:
        raise NoDatabase(database_refusal(e, f", or {instead}" if instead else "")) from None


@contextmanager
def store_at(
    db: str,
    *,
    create: bool = False,
    instead: str = CREATE_INSTEAD,
    checked: Settings | None = None,
) -> Iterator[KnowledgeBaseStore]:
    """Open the store for one command (an existing one unless `create`; `checked`: the
    settings with which the caller has just run `require_database`); report its domain errors
    as click errors."""
    settings = checked or read_settings(db)
    if checked is None:
        require_database(db, create=create, instead=instead, settings=settings)
    try:
        store = open_store(settings=settings)
    except SemanticUnavailable as e:
        raise click.ClickException(semantic_missing(e.missing)) from None
    except Exception as e:  # the database could not be opened at all
        message = one_line(str(e)).replace(db, redact(db))
        raise NoDatabase(cannot_open(redact(db), settings.db, message)) from e
    try:
        yield store
    except DomainError as fact:
        raise click.ClickException(refusal(fact)) from None
    finally:
        store.close()


def with_store(func: Callable[..., R]) -> Callable[..., R]:
    """Add `--db` and pass the open `store` of an existing database to the command."""

    @existing_db_option
    @functools.wraps(func)
    def wrapper(*args: Any, db: str, **kwargs: Any) -> R:
        with store_at(db) as store:
            return func(*args, store=store, **kwargs)

    return wrapper


def with_new_store(func: Callable[..., R]) -> Callable[..., R]:
    """Add `--db` and pass an open `store` to the command, creating the database if missing
    (and saying so on stderr, so a mistyped path shows at once)."""

    @db_option
    @functools.wraps(func)
    def wrapper(*args: Any, db: str, **kwargs: Any) -> R:
        settings = read_settings(db)
        existed = require_database(db, create=True, settings=settings)
        with store_at(db, create=True, checked=settings) as store:
            result = func(*args, store=store, **kwargs)
        if not existed:
            what = "log in" if db.lower().startswith(POSTGRES_SCHEMES) else "database"
            click.echo(f"created the kbes {what} {redact(db)}", err=True)
        return result

    return wrapper


def print_json(data: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(data), indent=2).decode())


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "") -> None:
    """A plain aligned table for people."""
    cells = [[str(h) for h in headers], *[["" if v is None else str(v) for v in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        line = "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        click.echo(indent + line)
        if n == 0:
            click.echo(indent + "  ".join("-" * w for w in widths))


NO_AUTHOR = "(not recorded)"
"""An event's author as a person reads it when the event has none (written before kbes
recorded authors)."""


def author_text(author: Author | None) -> str:
    """An event's author for a table: its name, then its kind and how kbes knows it
    (`alice (person, env)`, `support-bot (token, bearer)`, `claude-code 2.1 (client,
    declared, approved)`)."""
    if author is None:
        return NO_AUTHOR
    approved = ", approved" if author.approved else ""
    return f"{author.name} ({author.kind}, {author.how}{approved})"


def author_option(func: F) -> F:
    """`--author NAME`: the person the command's events record as their author (default:
    `KBES_AUTHOR`, else the operating-system user). Resolved, and a bad name refused naming
    `--author` or `KBES_AUTHOR`, before the store is opened, so nothing is written."""
    return click.option(
        "--author",
        "author",
        metavar="NAME",
        callback=_resolve_author,
        help=f"Who the change is recorded as (default: {AUTHOR_ENV}, else the OS user).",
    )(func)


def _resolve_author(ctx: click.Context, param: click.Parameter, value: str | None) -> Author:
    try:
        return person_running(value)
    except InvalidArgument as fact:
        hint = "--author" if value is not None else AUTHOR_ENV
        raise click.BadParameter(words(fact), ctx, param_hint=hint) from None
