"""`kbes rebuild`: drop the views and replay the whole log into them."""

from __future__ import annotations

import sys

import click

from kbes.application import KnowledgeBaseStore
from kbes.cli.options import with_store


@click.command("rebuild")
@with_store
def rebuild(store: KnowledgeBaseStore) -> None:
    """Drop the read models (article state, version history, search index) and rebuild them
    from the event log. Safe to run at any time: the log is never touched."""
    head = store.recorder.max_notification_id() or 0
    with click.progressbar(length=head, label="replaying events", file=sys.stderr) as bar:
        position = store.rebuild(progress=bar.update)
    click.echo(f"rebuilt views from {position} events")
