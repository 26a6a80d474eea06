"""The `--grant` values people type, to `kbes serve` and `kbes token add`: a knowledge-base id,
several separated by commas, or `*` for every one (a tokens file's GRANTS syntax, so that one
setting, such as a Claude Desktop bundle's, can say either); each id must name a knowledge base
of the database, so a typo fails now rather than answering not_found to every call."""

from __future__ import annotations

from collections.abc import Sequence

import click

from kbes.store.application import KnowledgeBaseStore
from kbes.tools.grants import EVERY, BadGrantList, Grants, parse_grant_list

GRANT_HELP = (
    "several ids may be given at once, separated by commas (no spaces), and '*' grants every "
    "knowledge base (a tokens file's GRANTS syntax). `kbes kb list` shows the ids."
)


def grant_values(store: KnowledgeBaseStore, values: Sequence[str]) -> Grants:
    """The canonical ids the `--grant` values name (None: every knowledge base)."""
    lists = []
    for raw in values:
        try:
            lists.append(parse_grant_list(raw))
        except BadGrantList as e:
            raise click.BadParameter(refusal(e.item), param_hint="--grant") from None
    if None in lists:
        if len(lists) > 1:
            raise click.BadParameter(refusal(EVERY), param_hint="--grant")
        return None
    store.catch_up()
    grants: set[str] = set()
    for raw, ids in zip(values, lists, strict=True):
        for kb in sorted(ids or ()):
            if store.knowledge_base(kb) is None:
                raise click.BadParameter(refusal(kb if "," in raw else raw), param_hint="--grant")
            grants.add(kb)
    return frozenset(grants)


def refusal(item: str) -> str:
    if item == EVERY:
        return f"'{EVERY}' grants every knowledge base: give it alone"
    return f"no knowledge base {item!r} in this database; `kbes kb list` shows the ids"
