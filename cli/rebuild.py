"""`kbes rebuild`: replay the whole log into views built aside, then switch them in."""

from __future__ import annotations

import sys

import click

from kbes.cli.options import with_store
from kbes.store.application import KnowledgeBaseStore


@click.command("rebuild")
@with_store
def rebuild(store: KnowledgeBaseStore) -> None:
    """Rebuild the read models (article state, version history, search index) from the event
    log. Safe to run at any time: the log is never touched, and servers keep answering from the
    old read models until the new ones are complete and switched in."""
    head = store.head()
    with click.progressbar(length=head, label="replaying events", file=sys.stderr) as bar:
        position = store.rebuild(progress=bar.update)
    click.echo(f"rebuilt views from {position} events")
