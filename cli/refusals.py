"""The words a person reads when a command is refused, each refusal worded once: the domain and
the application raise facts (`kbes.domain.errors`), and `WORDS`, one entry per fact, turns each
into a line that says what to do next in terms of kbes's commands and options; `refusal` is
what a command prints (`kbes.cli.options.store_at`). The code before the words is the wire's
(`kbes.tools.refusals`); the words a model reads are the agent contract's."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from kbes.domain.errors import (
    AlreadyPublished,
    ArticleChanged,
    ArticleElsewhere,
    ArticleNotFound,
    ArticleNotInLog,
    ArticleUnknown,
    ArticleUnpublished,
    BlankAuthor,
    BlankName,
    BlankTitle,
    Busy,
    DiffTooLarge,
    DomainError,
    EmptyKey,
    IndexUnavailable,
    InvalidArgument,
    InvalidId,
    KeyReused,
    KnowledgeBaseNotFound,
    NotATime,
    NothingToSave,
    NotPublished,
    TitleCharacter,
    TooLong,
    Unavailable,
    VersionNotFound,
    WriteContended,
)
from kbes.log.importer import (
    FileBecameLink,
    FileNotText,
    FileRefused,
    NameNotText,
    NoMarkdown,
    PinTaken,
    shown,
)
from kbes.log.markdown_file import FrontMatterRefused
from kbes.store import probe
from kbes.store.probe import sql_name
from kbes.store.settings import VIEWS_ENV
from kbes.tools import refusals as wire

BLANK_NAME = "a knowledge base needs a non-empty name"

_WHAT = {"title": "the title", "content": "the content", "name": "the name"}
# An author's name is refused naming where it came from (`--author`, `KBES_AUTHOR`): `_WHAT`
# leaves those as they are.
_PLURAL = {"title": "titles", "name": "knowledge-base names"}


def refusal(fact: DomainError) -> str:
    """What a command says when the store refuses it: the fact's code, then the words."""
    return f"{wire.refusal(fact).code}: {words(fact)}"


def words(fact: DomainError) -> str:
    """The person's words for a fact."""
    return WORDS[type(fact)](fact)


def _write_contended(fact: WriteContended) -> str:
    what = f"article {fact.article_id}" if fact.article_id is not None else "its articles"
    return (
        f"another process wrote {what} first each of the {fact.attempts} times this command "
        "tried (each time on the article as it then stood); nothing was written, run the "
        "command again"
    )


def file_refusal(fact: InvalidArgument) -> str:
    """Why `kbes import` skipped a file, and what fixes it (the file is named beside it)."""
    if isinstance(fact, NameNotText):
        return (
            "the file name is not valid UTF-8; rename it (the name is what the article's id "
            "is made from)"
        )
    if isinstance(fact, FileNotText):
        return f"not UTF-8 text ({fact.reason}); save it as UTF-8"
    if isinstance(fact, FileBecameLink):
        return "became a symbolic link while the folder was read; links are never followed"
    if isinstance(fact, FileRefused):
        cause = fact.cause
        if isinstance(cause, FrontMatterRefused):
            return f"its front matter is {cause.reason}; fix the YAML between the `---` lines"
        if isinstance(cause, PinTaken):
            return (
                f"its front matter `id: {cause.pin}` is also {shown(cause.other)}'s; give each "
                "file its own id"
            )
        if cause.field == "title":
            return (
                f"{words(cause)}; fix its first heading or file name, or give it a `title:` "
                "in front matter"
            )
        return f"{words(cause)}; shorten the file or raise the limit"
    return words(fact)


def _file_refused(fact: FileRefused) -> str:
    what = "its `# ` heading or file name" if fact.field == "title" else "it"
    return f"{shown(fact.name)}: {words(fact.cause)}; fix {what} and import again"


def _title_character(fact: TitleCharacter) -> str:
    what = _WHAT.get(fact.field, fact.field)
    return (
        f"{what} has the control or format character U+{ord(fact.char):04X} "
        f"(category {fact.category}) at position {fact.position}; "
        f"{_PLURAL.get(fact.field, 'they')} are one line of visible text, so remove it"
    )


def _too_long(fact: TooLong) -> str:
    return (
        f"{_WHAT.get(fact.field, fact.field)} is {fact.length} characters; "
        f"the limit is {fact.limit}" + (f" ({fact.variable})" if fact.variable else "")
    )


def _not_a_time(fact: NotATime) -> str:
    return (
        f"{fact.value!r} is not an RFC 3339 time with an offset ({fact.reason}); "
        "pass e.g. 2026-11-30T09:00:00.000000Z"
    )


WORDS: dict[type[DomainError], Callable[[Any], str]] = {
    KnowledgeBaseNotFound: lambda fact: (
        f"no knowledge base {fact.knowledge_base_id} is available here; "
        "`kbes kb list` shows the knowledge bases in this database"
    ),
    ArticleNotFound: lambda fact: f"no published article {fact.article_id} in this knowledge base",
    ArticleUnknown: lambda fact: f"no article {fact.article_id}",
    ArticleNotInLog: lambda fact: f"no article {fact.article_id} in this log",
    ArticleElsewhere: lambda fact: (
        f"article {fact.article_id} is not in knowledge base {fact.knowledge_base_id}; "
        f"`kbes article list --kb {fact.knowledge_base_id}` lists its articles"
    ),
    ArticleUnpublished: lambda fact: (
        f"article {fact.article_id} was unpublished at {fact.unpublished_at}"
    ),
    AlreadyPublished: lambda fact: f"article {fact.article_id} is already published",
    NotPublished: lambda fact: f"article {fact.article_id} is not published",
    ArticleChanged: lambda fact: (
        f"article {fact.article_id} changed since {fact.expected_version}: its current version "
        f"is {fact.current_version}; nothing was written. Read it again (kbes article show), "
        "re-apply your change to the current content, and retry with "
        f"--expected-version {fact.current_version}"
    ),
    KeyReused: lambda fact: (
        f"idempotency key {fact.idempotency_key!r} is bound to another edit of {fact.article_id}"
    ),
    WriteContended: _write_contended,
    Busy: lambda fact: fact.reason,
    Unavailable: lambda fact: fact.reason,
    IndexUnavailable: lambda fact: fact.reason,
    VersionNotFound: lambda fact: no_version(fact.article_id, fact),
    DiffTooLarge: lambda fact: (
        f"diffing {fact.old_lines} lines into {fact.new_lines} takes over {fact.budget} steps"
    ),
    NotATime: _not_a_time,
    InvalidId: lambda fact: f"{fact.field} {fact.value!r} is not a valid id",
    BlankName: lambda fact: BLANK_NAME,
    NothingToSave: lambda fact: "nothing to save: give new content, a new title, or both",
    BlankAuthor: lambda fact: (
        f"{fact.field} is blank; give the name of the person making the change"
    ),
    BlankTitle: lambda fact: (
        "the title is blank; give a few words saying what the article is about"
    ),
    TitleCharacter: _title_character,
    EmptyKey: lambda fact: "empty idempotency key",
    TooLong: _too_long,
    NoMarkdown: lambda fact: f"no Markdown (*.md or *.markdown) files in {fact.folder}",
    NameNotText: lambda fact: (
        f"{shown(fact.name)}: the file name is not valid UTF-8; rename it (the name is what "
        "the article's id is made from)"
    ),
    FileNotText: lambda fact: f"{fact.path} is not UTF-8 text: {fact.reason}",
    FileBecameLink: lambda fact: (
        f"{fact.path} became a symbolic link during the import; links are never followed"
    ),
    FileRefused: _file_refused,
    FrontMatterRefused: lambda fact: f"front matter: {fact.reason}",
    PinTaken: lambda fact: f"front matter id {fact.pin!r} is also {shown(fact.other)}'s",
}
"""Each fact in a person's words. One entry per fact (`tests/test_refusal_tables.py`)."""


def same_name(name: str, ids: Sequence[str], new_id: str) -> str:
    """The warning of `kbes kb create` when the name is already a knowledge base's."""
    named = ", ".join(ids)
    return (
        f"warning: {'a knowledge base is' if len(ids) == 1 else f'{len(ids)} knowledge bases are'}"
        f" already named {name!r} ({named}); created another, {new_id}. Names need not be "
        "unique: tell them apart by id, in grants and citations alike"
    )


def no_version(article_id: object, e: VersionNotFound) -> str:
    """A time the article has no version at (`kbes article show --at`: named as typed)."""
    return (
        f"article {article_id} never had a version at {e.updated_at}; "
        "`kbes article history` lists its versions"
    )


def not_a_knowledge_base_id(kb: str) -> str:
    """`--kb` given something that is no id at all."""
    return f"{kb!r} is not a knowledge-base id; see `kbes kb list`"


def no_knowledge_base_for_option(kb: str) -> str:
    """`--kb` given the id of no knowledge base in the database."""
    return f"no knowledge base {kb} in this database; see `kbes kb list`"


def cannot_open(shown: str, path: str, reason: str) -> str:
    """Why a database could not be opened; for a SQLite file on a read-only file system,
    which SQLite calls "unable to open database file" (issue 35), that and what to do."""
    folder = os.path.dirname(os.path.abspath(path))
    if "://" not in path and read_only_folder(folder):
        return (
            f"cannot open database {shown!r} (--db / KBES_DB): the file system holding it "
            f"({folder}) is read-only, and kbes writes beside the file (its -wal and -shm "
            "files) even to read it; copy it to a writable place, or remount read-write"
        )
    return f"cannot open database {shown!r} (--db / KBES_DB): {reason}"


def read_only_folder(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:  # no such folder: not a read-only one
        return False


def database_refusal(e: probe.Refused, alternative: str) -> str:
    """The words for a person of why their `--db` is refused; `alternative` ends a refusal of
    a missing database with another way."""
    match e:
        case probe.MistypedUrl(database=db, scheme=scheme):
            return (
                f"--db {db!r} is not a URL: write {scheme}://user:password@host:port/dbname "
                "(a colon and two slashes after the scheme)"
            )
        case probe.ForeignUrl(database=db):
            return (
                f"--db {db!r}: kbes keeps its log in a SQLite file or in PostgreSQL; give "
                "a file path or a postgresql://user:password@host:port/dbname URL"
            )
        case probe.SqliteUri(database=db, path=path):
            return (
                f"--db {db!r} (or KBES_DB) is a SQLite URI, which kbes does not take; "
                f"give a file path, e.g. --db {path}"
            )
        case probe.InMemory(database=db):
            return (
                f"--db {db!r} (or KBES_DB) names an in-memory database, which vanishes when the "
                "command ends; give a file path, e.g. --db kbes.sqlite"
            )
        case probe.ForeignSqlite(database=db):
            return (
                f"{db!r} is a SQLite database without a kbes log (it holds other tables); point "
                "--db at a kbes database, or at a new file for a new one"
            )
        case probe.ForeignLog(database=db):
            return (
                f"{db!r} holds another eventsourcing application's log, not kbes's; kbes "
                "leaves it as it is. Point --db at a kbes database, or at a new file for a "
                "new one"
            )
        case probe.Missing(database=db, empty_file=empty_file):
            what = "an empty database file" if empty_file else "no kbes database"
            return (
                f"{what} at {db!r}; pass --db PATH (or set KBES_DB) to an existing database"
                f"{alternative}"
            )
        case probe.CannotOpen(database=db, reason=reason):
            return cannot_open(db, db, reason)
        case probe.PostgresExtraMissing(reason=reason):
            return f"--db is a PostgreSQL URL, which needs kbes's postgres extra: {reason}"
        case probe.BadPostgresUrl(reason=reason):
            return f"--db: {reason}"
        case probe.SchemaDenied(database=db, role=role, schema=schema, create=create):
            return (
                f"role {role!r} may not use schema {schema!r} of database {db!r}; GRANT "
                f"USAGE{', CREATE' if create else ''} ON SCHEMA {sql_name(schema)} TO "
                f"{sql_name(role)}"
            )
        case probe.NoSchema(database=db, role=role, schema=schema):
            return (
                f"database {db!r} has no schema {schema!r} for kbes's log; create it (CREATE "
                f"SCHEMA {sql_name(schema)} AUTHORIZATION {sql_name(role)}) or drop ?schema= "
                "from the URL"
            )
        case probe.MayNotCreate(role=role, schema=schema, dbname=dbname):
            who = sql_name(role)
            # Since PostgreSQL 15 only the database's owner may create in `public`.
            owner = (
                f"make the role the database's owner (createdb -O {shlex.quote(role)} "
                f"{shlex.quote(dbname)}, or ALTER DATABASE {sql_name(dbname)} OWNER TO {who}) or "
                if schema == "public"
                else ""
            )
            return (
                f"role {role!r} may not create kbes's tables in schema {schema!r} of database "
                f"{dbname!r}; {owner}GRANT CREATE ON SCHEMA {sql_name(schema)} TO {who}"
            )
        case probe.ForeignViews(views=views, source=source):
            return (
                f"{VIEWS_ENV}={views} holds the views of another event log ({source}), and this "
                "database has no kbes log yet; unset it or point it at a new file (nothing was "
                "created)"
            )
        case probe.NoPostgresLog(database=db, schema=schema, table=table):
            return (
                f"no kbes log in database {db!r} (it has no table {schema}.{table}); "
                "pass --db (or set KBES_DB) to the URL of the database kbes writes its log to"
                f"{alternative}"
            )
    raise AssertionError(f"no words for {e!r}")  # pragma: no cover - every kind has a case


def semantic_missing(missing: Sequence[str]) -> str:
    """Hybrid search asked for without the `semantic` extra installed."""
    return (
        "--search hybrid (KBES_SEARCH=hybrid) needs the semantic extra, which is not installed "
        f"(missing: {', '.join(missing)}): pip install 'kbes[semantic]', or search with "
        "--search keyword"
    )
