"""Where stored events' topics point: the modules that held the aggregates before the domain
was a sub-package. A stored event names its class by topic (`kbes.article:Article.Saved`), and
eventsourcing resolves a registered module topic before importing one, so old logs, snapshots
and exports load into today's classes. New events carry today's topics."""

from __future__ import annotations

from eventsourcing.utils import register_topic

from kbes.domain import article, knowledge_base, receipt

MOVED = {
    "kbes.article": article,
    "kbes.knowledge_base": knowledge_base,
    "kbes.receipt": receipt,
}
"""Old module topic -> the module that holds its classes now."""

for _old, _module in MOVED.items():
    register_topic(_old, _module)
