"""`kbes import`: a folder of Markdown files into a knowledge base, once or kept in step."""

from __future__ import annotations

from pathlib import Path

import click

from kbes.cli.embed import embed
from kbes.cli.options import (
    author_option,
    existing_db_option,
    json_option,
    print_json,
    store_at,
)
from kbes.cli.refusals import file_refusal
from kbes.cli.search_option import search_option, search_settings
from kbes.domain.author import Author
from kbes.log.importer import ImportPartlyWritten, ImportReport, shown
from kbes.log.importer import import_folder as run_import
from kbes.store.application import KnowledgeBaseStore

SKIPPED_EXIT = 3
"""The exit status when some files could not be imported (the rest were)."""


@click.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kb", "kb", required=True, metavar="ID", help="The knowledge base to import into.")
@click.option(
    "--publish",
    is_flag=True,
    help="Publish new articles (an article a person unpublished stays unpublished).",
)
@click.option(
    "--sync",
    is_flag=True,
    help="Also unpublish the articles of this folder's files that are gone, and keep the "
    "article of a file renamed or moved (same front matter id, or same content).",
)
@click.option("--dry-run", is_flag=True, help="Say what the import would change; write nothing.")
@click.option(
    "--watch",
    is_flag=True,
    help="Sync now, then again within about a second of each change, until stopped "
    "(implies --sync).",
)
@click.option(
    "--source",
    metavar="NAME",
    help="The name this folder's record has in the knowledge base (default: the folder's "
    "own name); two folders imported into one knowledge base need two names.",
)
@json_option
@author_option
@existing_db_option
@search_option
def import_folder(
    folder: Path,
    kb: str,
    publish: bool,
    sync: bool,
    dry_run: bool,
    watch: bool,
    source: str | None,
    as_json: bool,
    author: Author,
    db: str,
    search: str | None,
) -> None:
    """Import FOLDER's Markdown files (*.md and *.markdown, recursively), one article per file.

    The title is front matter's `title:`, else the first level-1 heading outside code (`# `,
    or a line over `===`), else the file name. Front matter is not content. Hidden files and
    folders, node_modules and what .gitignore excludes are not read; empty files are not
    published. A file that cannot be imported is named on stderr with the reason and the fix,
    the rest is imported, and the exit status is 3.

    Importing the same folder again saves only the files that changed (each line names the
    event it wrote). With --sync, the articles of files that are gone are unpublished, and a
    renamed or moved file keeps its article. Into a SQLite file the import is one transaction:
    all or nothing. Into PostgreSQL it is written in batches of about 1,000,000 characters,
    each its own transaction; if it fails after a batch was written it prints what it wrote
    and says so, and importing the folder again writes the rest.

    Symbolic links are never followed, to a file or a folder, leading out of FOLDER or
    staying in: each is skipped and named on stderr, so nothing outside FOLDER is read.

    With --search hybrid (or KBES_SEARCH=hybrid) the published articles are then embedded
    for search by meaning, with a progress bar (about 0.1 s an article; see docs/search.md).

    Every event the import writes (each --watch sync's too) records the person running it as
    its author (--author, else KBES_AUTHOR, else the OS user).
    """
    if watch and dry_run:
        raise click.UsageError("--watch writes as it goes; use --dry-run without it")
    with store_at(db, checked=search_settings(db, search)) as store:
        if watch:
            from kbes.cli.watch import watch_folder  # watchfiles: only a watcher needs it

            watch_folder(store, folder, kb, publish=publish, source=source, by=author)
            return
        refused = _import(
            store,
            folder,
            kb,
            publish=publish,
            sync=sync,
            dry_run=dry_run,
            source=source,
            as_json=as_json,
            by=author,
        )
    if refused:
        click.get_current_context().exit(SKIPPED_EXIT)


def _import(
    store: KnowledgeBaseStore,
    folder: Path,
    kb: str,
    *,
    publish: bool,
    sync: bool,
    dry_run: bool,
    source: str | None,
    as_json: bool,
    by: Author,
) -> int:
    """Run one import and print it; returns how many files could not be imported."""
    try:
        report = run_import(
            store, kb, folder, publish=publish, sync=sync, dry_run=dry_run, source=source, by=by
        )
    except ImportPartlyWritten as e:
        print_report(e.report, as_json=as_json, sync=sync)
        raise click.ClickException(f"{e} ({e.__cause__})") from e
    print_report(report, as_json=as_json, sync=sync, dry_run=dry_run)
    if store.settings.search == "hybrid" and not dry_run:
        embed(store)
    return len(report.refused)


def skipped_lines(report: ImportReport) -> dict[str, str]:
    """Every file skipped or refused, with the reason (and the fix)."""
    reasons = dict(report.skipped)
    reasons.update((key, file_refusal(fact)) for key, fact in report.refused.items())
    return dict(sorted(reasons.items()))


def print_report(report: ImportReport, *, as_json: bool, sync: bool, dry_run: bool = False) -> None:
    for key, reason in skipped_lines(report).items():
        click.echo(f"skipped  {shown(key)}: {reason}", err=True)
    if report.refused:
        click.echo(
            f"{len(report.refused)} file(s) could not be imported (named above); the rest were",
            err=True,
        )
    if as_json:
        data = {k: v for k, v in report.__dict__.items() if k not in ("skipped", "refused")}
        print_json({**data, "skipped": skipped_lines(report), "dry_run": dry_run})
        return
    for line in event_lines(report):
        click.echo(line)
    summary = (
        f"{len(report.added)} added, {len(report.saved)} saved, "
        f"{len(report.published)} published, {len(report.unchanged)} unchanged"
    )
    if sync:
        summary += f", {len(report.unpublished)} unpublished"
    click.echo(summary + (" (dry run: nothing was written)" if dry_run else ""))


def event_lines(report: ImportReport) -> list[str]:
    """One line per file the import changed, naming the event it wrote."""
    ids = report.article_ids
    lines = [f"added      {ids[key]}  {key}" for key in report.added]
    for key in report.saved:
        what = "retitled" if key in report.retitled else "saved"
        lines.append(f"{what:<10} {ids[key]}  {key}")
    for key in report.moved:
        lines.append(f"moved      {ids[key]}  {key} (was {report.moved_from[key]})")
    for key in report.republished:
        lines.append(f"republished {ids[key]}  {key} (the file is back)")
    for key in report.unpublished:
        lines.append(f"unpublished {ids[key]}  {key} (the file is gone)")
    for key in report.left_unpublished:
        lines.append(f"unpublished (left as is) {ids[key]}  {key}")
    return lines
