"""The words a person reads when a command is refused, each refusal worded once: the domain and
the application raise facts (`kbes.domain.errors`), and every command turns them into a line
that says what to do next in terms of kbes's commands and options. (The words a model reads are
the agent contract's, `kbes.tools.refusals`.)"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from kbes.domain.errors import (
    AlreadyPublished,
    ArticleElsewhere,
    ArticleUnknown,
    BlankName,
    BlankTitle,
    InvalidArgument,
    InvalidId,
    KbesError,
    KnowledgeBaseNotFound,
    NotATime,
    NothingToSave,
    NotPublished,
    TitleCharacter,
    TooLong,
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

BLANK_NAME = "a knowledge base needs a non-empty name"

_WHAT = {"title": "the title", "content": "the content", "name": "the name"}
_PLURAL = {"title": "titles", "name": "knowledge-base names"}


def refusal(e: KbesError) -> str:
    """What a command says when the store refuses it: the error's code, then the words."""
    return f"{e.code}: {words(e)}"


def words(e: KbesError) -> str:
    if isinstance(e, KnowledgeBaseNotFound):
        return (
            f"no knowledge base {e.knowledge_base_id} is available here; "
            "`kbes kb list` shows the knowledge bases in this database"
        )
    if isinstance(e, ArticleElsewhere):
        return (
            f"article {e.article_id} is not in knowledge base {e.knowledge_base_id}; "
            f"`kbes article list --kb {e.knowledge_base_id}` lists its articles"
        )
    if isinstance(e, ArticleUnknown):
        return f"no article {e.article_id}"
    if isinstance(e, InvalidId):
        return f"{e.field} {e.value!r} is not a valid id"
    if isinstance(e, AlreadyPublished):
        return f"article {e.article_id} is already published"
    if isinstance(e, NotPublished):
        return f"article {e.article_id} is not published"
    if isinstance(e, NothingToSave):
        return "nothing to save: give new content, a new title, or both"
    if isinstance(e, BlankName):
        return BLANK_NAME
    if isinstance(e, NoMarkdown):
        return f"no Markdown (*.md or *.markdown) files in {e.folder}"
    if isinstance(e, NameNotText):
        return (
            f"{shown(e.name)}: the file name is not valid UTF-8; rename it (the name is what "
            "the article's id is made from)"
        )
    if isinstance(e, FileNotText):
        return f"{e.path} is not UTF-8 text: {e.reason}"
    if isinstance(e, FileBecameLink):
        return f"{e.path} became a symbolic link during the import; links are never followed"
    if isinstance(e, FileRefused):
        what = "its `# ` heading or file name" if e.details.get("field") == "title" else "it"
        return f"{shown(e.name)}: {problem(e.cause)}; fix {what} and import again"
    if isinstance(e, WriteContended):
        what = f"article {e.article_id}" if e.article_id is not None else "its articles"
        return (
            f"another process wrote {what} first each of the {e.attempts} times this command "
            "tried (each time on the article as it then stood); nothing was written, run the "
            "command again"
        )
    if isinstance(e, InvalidArgument):
        return problem(e)
    return e.message


def file_refusal(e: InvalidArgument) -> str:
    """Why `kbes import` skipped a file, and what fixes it (the file is named beside it)."""
    if isinstance(e, NameNotText):
        return (
            "the file name is not valid UTF-8; rename it (the name is what the article's id "
            "is made from)"
        )
    if isinstance(e, FileNotText):
        return f"not UTF-8 text ({e.reason}); save it as UTF-8"
    if isinstance(e, FileBecameLink):
        return "became a symbolic link while the folder was read; links are never followed"
    if isinstance(e, FileRefused):
        cause = e.cause
        if isinstance(cause, FrontMatterRefused):
            return f"its front matter is {cause.reason}; fix the YAML between the `---` lines"
        if isinstance(cause, PinTaken):
            return (
                f"its front matter `id: {cause.pin}` is also {shown(cause.other)}'s; give each "
                "file its own id"
            )
        if cause.details.get("field") == "title":
            return (
                f"{problem(cause)}; fix its first heading or file name, or give it a `title:` "
                "in front matter"
            )
        return f"{problem(cause)}; shorten the file or raise the limit"
    return words(e)


def problem(fact: InvalidArgument) -> str:
    """The domain's refusal of a title or a content (`kbes.domain.limits`), or of a time."""
    if isinstance(fact, BlankTitle):
        return "the title is blank; give a few words saying what the article is about"
    if isinstance(fact, TitleCharacter):
        what = _WHAT.get(fact.field, fact.field)
        return (
            f"{what} has the control or format character U+{ord(fact.char):04X} "
            f"(category {fact.category}) at position {fact.position}; "
            f"{_PLURAL.get(fact.field, 'they')} are one line of visible text, so remove it"
        )
    if isinstance(fact, TooLong):
        return (
            f"{_WHAT.get(fact.field, fact.field)} is {fact.length} characters; "
            f"the limit is {fact.limit}" + (f" ({fact.variable})" if fact.variable else "")
        )
    if isinstance(fact, NotATime):
        return (
            f"{fact.value!r} is not an RFC 3339 time with an offset ({fact.reason}); "
            "pass e.g. 2026-11-30T09:00:00.000000Z"
        )
    return fact.message


def name_refusal(fact: InvalidArgument) -> str:
    """A knowledge base's name refused by the title rule (`kbes.domain.limits.name_problem`)."""
    return BLANK_NAME if isinstance(fact, BlankName) else problem(fact)


def same_name(name: str, ids: Sequence[str], new_id: str) -> str:
    """The warning of `kbes kb create` when the name is already a knowledge base's."""
    named = ", ".join(ids)
    return (
        f"warning: {'a knowledge base is' if len(ids) == 1 else f'{len(ids)} knowledge bases are'}"
        f" already named {name!r} ({named}); created another, {new_id}. Names need not be "
        "unique: tell them apart by id, in grants and citations alike"
    )


def no_version(article_id: str, e: VersionNotFound) -> str:
    """`kbes article show --at` a time the article has no version at."""
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
        case probe.Missing(database=db, empty_file=empty_file):
            what = "an empty database file" if empty_file else "no kbes database"
            return (
                f"{what} at {db!r}; pass --db PATH (or set KBES_DB) to an existing database"
                f"{alternative}"
            )
        case probe.CannotOpen(database=db, reason=reason):
            return f"cannot open database {db!r} (--db / KBES_DB): {reason}"
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
