"""`kbes audit`: classify citations by replaying the log (the database's, or an exported one).

Exit codes: 0 the audit ran (and no citation fell in a `--fail-on` class); 1 some did; 2 the
audit could not run (bad citations file, bad flag, unreadable database or log)."""

from __future__ import annotations

from datetime import datetime

import click
import msgspec
from click.core import ParameterSource

from kbes.cli.options import (
    author_text,
    existing_db_option,
    json_option,
    print_table,
    store_at,
)
from kbes.domain.clock import parse_timestamp
from kbes.log.audit import (
    CLASSES,
    NOT_YET,
    AuditReport,
    CitationsFormatError,
    audit,
    classes,
    parse_citations,
)
from kbes.log.export import LogFormatError, LogSource
from kbes.log.history import History, StoreSource


class AuditInputError(click.ClickException):
    """The audit could not run; exit code 2 keeps it apart from a `--fail-on` finding (1)."""

    exit_code = 2


AUDIT_LOG_INSTEAD = "audit an exported log with --log EVENTS.jsonl"


def parse_fail_on(values: tuple[str, ...]) -> frozenset[str]:
    classes: set[str] = set()
    for value in values:
        for name in value.split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in (*CLASSES, NOT_YET):
                raise AuditInputError(
                    f"--fail-on: unknown class {name!r}; use a comma-separated list of "
                    f"{', '.join(CLASSES)} (e.g. --fail-on changed,gone,invalid), or "
                    f"{NOT_YET} with --as-of"
                )
            classes.add(name)
    if values and not classes:
        raise AuditInputError("--fail-on needs at least one class, e.g. --fail-on gone,invalid")
    return frozenset(classes)


def parse_as_of(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except ValueError as e:
        raise AuditInputError(
            f"--as-of {value!r} is not an RFC 3339 time with a UTC offset ({e}); "
            "pass e.g. --as-of 2026-11-30T09:00:00.000000Z"
        ) from None


def read_citation_lines(path: str) -> list[bytes]:
    try:
        with click.open_file(path, "rb") as f:
            return f.read().splitlines()
    except OSError as e:
        raise AuditInputError(f"cannot read citations file {path!r}: {e}") from None


@click.command("audit")
@click.argument("citations", metavar="CITATIONS", type=click.Path(dir_okay=False, allow_dash=True))
@existing_db_option
@click.option(
    "--log",
    "log_path",
    metavar="EVENTS.jsonl",
    type=click.Path(exists=True, dir_okay=False),
    help="Audit against a log written by `kbes log export` instead of a database.",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    help="Replay the log only up to this RFC 3339 time (e.g. 2026-11-30T12:00:00Z); a "
    "citation of a later version is `not_yet` (not yet given then).",
)
@json_option
@click.option(
    "--diff", "show_diff", is_flag=True, help="Print each changed citation's unified diff."
)
@click.option(
    "--fail-on",
    "fail_on",
    metavar="CLASSES",
    multiple=True,
    help="Exit 1 if any citation is in these classes (comma-separated: changed,gone,invalid).",
)
@click.pass_context
def audit_command(
    ctx: click.Context,
    citations: str,
    db: str,
    log_path: str | None,
    as_of: str | None,
    as_json: bool,
    show_diff: bool,
    fail_on: tuple[str, ...],
) -> None:
    """Classify each citation in CITATIONS (JSON Lines of {knowledge_base_id, article_id,
    updated_at}, optionally with "quote"; "-" reads stdin) as current, changed, gone or
    invalid by replaying the log (with --as-of, not_yet for a citation of a later version),
    and print who changed each changed or gone citation since it was cited, event by event,
    then a summary line counting each class.

    The log is the database's (--db, default) or an export (--log); both give the same output
    for the same history. Exit status: 0 done, 1 a --fail-on class was found, 2 bad input.
    """
    failing = parse_fail_on(fail_on)
    instant = parse_as_of(as_of)
    if log_path is not None and ctx.get_parameter_source("db") == ParameterSource.COMMANDLINE:
        raise AuditInputError("give either --db or --log, not both")
    try:
        entries = parse_citations(read_citation_lines(citations), name=citations)
    except CitationsFormatError as e:
        raise AuditInputError(str(e)) from None
    try:
        if log_path is not None:
            report = audit(entries, History(LogSource.from_path(log_path)), instant)
        else:
            with store_at(db, instead=AUDIT_LOG_INSTEAD) as store:
                report = audit(entries, History(StoreSource(store)), instant)
    except LogFormatError as e:
        raise AuditInputError(f"--log: {e}") from None
    except AuditInputError:
        raise
    except click.ClickException as e:
        raise AuditInputError(e.message) from None
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(report), indent=2).decode())
    else:
        print_report(report, show_diff=show_diff)
    if failing:
        found = report.count(failing)
        if found:
            click.echo(
                f"kbes audit: {found} citation{'s' if found != 1 else ''} in "
                f"--fail-on classes ({','.join(c for c in classes(True) if c in failing)})",
                err=True,
            )
            ctx.exit(1)


def print_report(report: AuditReport, *, show_diff: bool) -> None:
    """The table for people, the diffs if asked, then the summary line."""
    print_table(
        ["line", "class", "article_id", "updated_at", "details"],
        [(e.line, e.status, e.article_id, e.updated_at, e.reason) for e in report.citations],
    )
    moved = [e for e in report.citations if e.changes]
    if moved:
        click.echo("\nWho changed them since they were cited:")
        for e in moved:
            click.echo(f"line {e.line}: {e.status}, {e.article_id}")
            print_table(
                ["updated_at", "type", "author"],
                [(c.updated_at, c.type, author_text(c.author)) for c in e.changes or []],
                indent="  ",
            )
    if show_diff:
        for e in report.citations:
            if e.diff:
                click.echo(f"\nline {e.line}: {e.status}, {e.article_id}")
                click.echo(e.diff, nl=False)
    click.echo(summary_line(report))


def summary_line(report: AuditReport) -> str:
    counts = ", ".join(f"{report.summary[c]} {c}" for c in classes(report.as_of is not None))
    total = report.summary["total"]
    as_of = f" as of {report.as_of}" if report.as_of else ""
    return f"{total} citation{'s' if total != 1 else ''}{as_of}: {counts}"
