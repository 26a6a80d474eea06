"""`kbes import`: a folder of Markdown files into a knowledge base."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kbes.cli.options import existing_db_option, json_option, print_json, store_at
from kbes.cli.search_option import search_option, search_settings
from kbes.log.importer import ImportPartlyWritten, ImportReport, shown
from kbes.log.importer import import_folder as run_import
from kbes.store.application import KnowledgeBaseStore


@click.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kb", "kb", required=True, metavar="ID", help="The knowledge base to import into.")
@click.option(
    "--publish",
    is_flag=True,
    help="Publish new articles (an article a person unpublished stays unpublished).",
)
@json_option
@existing_db_option
@search_option
def import_folder(
    folder: Path, kb: str, publish: bool, as_json: bool, db: str, search: str | None
) -> None:
    """Import FOLDER's Markdown files (*.md, recursively), one article per file.

    The title is the first '# ' heading, else the file name without .md. Importing the same
    folder again saves only the files that changed (each line names the event it wrote). Into
    a SQLite file the import is one transaction: all or nothing. Into PostgreSQL it is written
    in batches of about 1,000,000 characters, each its own transaction; if it fails after a
    batch was written it prints what it wrote and says so, and importing the folder again
    writes the rest.

    Symbolic links are never followed, to a file or a folder, leading out of FOLDER or
    staying in: each is skipped and named on stderr, so nothing outside FOLDER is read.

    With --search hybrid (or KBES_SEARCH=hybrid) the published articles are then embedded
    for search by meaning, with a progress bar (about 0.1 s an article; see docs/search.md).
    """
    with store_at(db, checked=search_settings(db, search)) as store:
        _import(store, folder, kb, publish=publish, as_json=as_json)


def _import(
    store: KnowledgeBaseStore, folder: Path, kb: str, *, publish: bool, as_json: bool
) -> None:
    try:
        report = run_import(store, kb, folder, publish=publish)
    except ImportPartlyWritten as e:
        _print(e.report, as_json=as_json)
        raise click.ClickException(f"{e} ({e.__cause__})") from e
    _print(report, as_json=as_json)
    if store.settings.search == "hybrid":
        embed(store)


def _print(report: ImportReport, *, as_json: bool) -> None:
    for key, reason in report.skipped.items():
        click.echo(f"skipped  {shown(key)}: {reason}", err=True)
    if as_json:
        print_json({k: v for k, v in report.__dict__.items() if k != "skipped"})
        return
    for key in report.added:
        click.echo(f"added      {report.article_ids[key]}  {key}")
    for key in report.saved:
        what = "retitled" if key in report.retitled else "saved"
        click.echo(f"{what:<10} {report.article_ids[key]}  {key}")
    for key in report.left_unpublished:
        click.echo(f"unpublished (left as is) {report.article_ids[key]}  {key}")
    click.echo(
        f"{len(report.added)} added, {len(report.saved)} saved, "
        f"{len(report.published)} published, {len(report.unchanged)} unchanged"
    )


def embed(store: KnowledgeBaseStore) -> None:
    """Embed what the import published, with a progress bar on stderr."""
    waiting = store.pending_embeddings()
    if not waiting:
        return
    with click.progressbar(length=waiting, label="embedding articles", file=sys.stderr) as bar:
        done = store.embed_pending(progress=bar.update)
    click.echo(f"{done} articles embedded for hybrid search", err=True)
