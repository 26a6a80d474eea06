"""`kbes log export`: the notification log as JSON Lines, for auditors without the database."""

from __future__ import annotations

from typing import IO
from uuid import UUID

import click

from kbes.cli.options import SEQUENCE, existing_db_option, store_at
from kbes.cli.refusals import no_knowledge_base_for_option, not_a_knowledge_base_id
from kbes.domain.errors import KnowledgeBaseNotFound
from kbes.domain.ids import parse_id
from kbes.log.export import export_log
from kbes.store.application import KnowledgeBaseStore


@click.group("log")
def log() -> None:
    """The notification log: every stored event, in sequence order."""


@log.command("export")
@existing_db_option
@click.option("--kb", "kb", metavar="ID", help="Only this knowledge base's events.")
@click.option(
    "--after",
    default=0,
    show_default=True,
    type=SEQUENCE,
    help="Only events after this sequence (append to an earlier export).",
)
@click.option(
    "--output",
    "-o",
    default="-",
    type=click.File("wb"),
    help="Write here instead of stdout.",
)
def export(db: str, kb: str | None, after: int, output: IO[bytes]) -> None:
    """Write every event (sequence, type, ids, timestamp, payload) as JSON Lines.

    `kbes log export > events.jsonl` then `kbes audit CITATIONS --log events.jsonl` gives the
    answers `kbes audit CITATIONS --db` gives. Exports made with --after N can be appended to
    an earlier one (`>> events.jsonl`).
    """
    with store_at(db, instead="") as store:
        knowledge_base_id = None
        if kb is not None:
            knowledge_base_id = _knowledge_base(store, kb)
        export_log(store, output, knowledge_base_id=knowledge_base_id, after=after)


def _knowledge_base(store: KnowledgeBaseStore, kb: str) -> UUID:
    kb_id = parse_id(kb)
    if kb_id is None:
        raise click.BadParameter(not_a_knowledge_base_id(kb), param_hint="--kb")
    try:
        return store.require_knowledge_base(kb_id)
    except KnowledgeBaseNotFound:
        raise click.BadParameter(no_knowledge_base_for_option(kb), param_hint="--kb") from None
