"""`kbes import`: a folder of Markdown files into a knowledge base."""

from __future__ import annotations

from pathlib import Path

import click

from kbes.cli.options import json_option, print_json, with_store
from kbes.log.importer import import_folder as run_import
from kbes.log.importer import shown
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
@with_store
def import_folder(
    store: KnowledgeBaseStore, folder: Path, kb: str, publish: bool, as_json: bool
) -> None:
    """Import FOLDER's Markdown files (*.md, recursively), one article per file.

    The title is the first '# ' heading, else the file name without .md. Importing the same
    folder again saves only the files that changed (each line names the event it wrote). The
    import is one transaction: all or nothing.

    Symbolic links are never followed, to a file or a folder, leading out of FOLDER or
    staying in: each is skipped and named on stderr, so nothing outside FOLDER is read.
    """
    report = run_import(store, kb, folder, publish=publish)
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
