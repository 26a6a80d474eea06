"""`kbes embed`: embed a database's backlog for hybrid search now, with a progress bar (what
`kbes import --search hybrid` does after an import, and `kbes serve --search hybrid` does in
the background)."""

from __future__ import annotations

import sys
import time

import click

from kbes.cli.options import existing_db_option, store_at
from kbes.cli.refusals import semantic_missing
from kbes.cli.search_option import search_settings
from kbes.projections.embedder import SemanticUnavailable, require
from kbes.store.application import KnowledgeBaseStore


@click.command("embed")
@existing_db_option
def embed_command(db: str) -> None:
    """Embed every published article that hybrid search has no vector for yet, with a progress
    bar (about 0.1 s of one core an article; docs/search.md). Until a knowledge base's articles
    are all embedded, hybrid search answers it by keywords alone. Safe beside a running server:
    each batch is stored in one short transaction, and an interrupted run keeps what it stored.

    \b
    Examples:
      kbes embed --db kb.sqlite
    """
    try:
        require()
    except SemanticUnavailable as e:
        raise click.ClickException(semantic_missing(e.missing)) from None
    with store_at(db, checked=search_settings(db, "hybrid")) as store:
        if not embed(store):
            click.echo("nothing to embed: every published article has its vector", err=True)


def embed(store: KnowledgeBaseStore) -> int:
    """Embed the backlog with a progress bar on stderr; how many texts were embedded."""
    waiting = store.pending_embeddings()
    if not waiting:
        return 0
    started, cpu = time.perf_counter(), time.process_time()
    with click.progressbar(length=waiting, label="embedding articles", file=sys.stderr) as bar:
        done = store.embed_pending(progress=bar.update)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    click.echo(
        f"{done} articles embedded for hybrid search in {seconds:.1f} s "
        f"({cpu:.1f} s of CPU, {cpu * 1000 / max(done, 1):.0f} s of CPU per 1,000 articles)",
        err=True,
    )
    return done


__all__ = ["embed", "embed_command"]
