"""The people's side of a simulated day: the store, the imported articles, and the saves.

People use the store's own commands (`add_articles`, `save_article`, `unpublish_article`): last
writer wins, no versions. The simulated clock is set before every action, so the log carries
the day's timestamps. The ground truth of a citation comes from here too: the article's current
`updated_at` and whether it is still published, as the store recorded them: the timestamp of
the event each save wrote, read back from the log (not through the agent's tools)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kbes import KnowledgeBaseStore, SimulatedClock, format_timestamp, open_store
from kbes.sims.day import Day, Save
from kbes.sims.trace import Trace


@dataclass(frozen=True)
class AppliedSave:
    """A save as the store recorded it: the version it produced."""

    at: int
    article_id: str
    kind: str
    updated_at: datetime
    sequence: int


@dataclass(frozen=True)
class Imported:
    """A knowledge base with the day's articles just imported and published."""

    knowledge_base_id: str
    article_ids: list[str]
    versions: list[datetime]
    """Each article's version after the import: the timestamp of its Published event."""


def open_day_store(
    day: Day, db: Path, *, throwaway: bool
) -> tuple[KnowledgeBaseStore, SimulatedClock]:
    """Open the store at `db` with a simulated clock at the start of the day.

    Simulation databases relax durability. The temporary ones use synchronous=OFF: no fsync
    at all (a power cut could lose or damage them, which does not matter for a file deleted
    after the run). A --db file named by the user gets synchronous=NORMAL: in WAL mode the
    file stays consistent, only the last commits may be lost on a power cut."""
    clock = SimulatedClock(day.start)
    store = open_store(db, clock=clock, synchronous="OFF" if throwaway else "NORMAL")
    return store, clock


def import_articles(store: KnowledgeBaseStore, day: Day, name: str) -> Imported:
    """Create a knowledge base and import the day's articles, published, in one transaction;
    then bring the views up to date, as the first tool call would."""
    knowledge_base_id = str(store.create_knowledge_base(name))
    before = store.head()
    ids = [
        str(i)
        for i in store.add_articles(
            knowledge_base_id, zip(day.titles, day.contents, strict=True), publish=True
        )
    ]
    versions: dict[str, datetime] = {}
    for _, event in store.logged_events(before, limit=2 * len(ids)):
        versions[str(event.originator_id)] = event.timestamp
    if set(versions) != set(ids):
        raise RuntimeError("the import's events do not match the imported articles")
    store.catch_up()
    return Imported(knowledge_base_id, ids, [versions[i] for i in ids])


class People:
    """One run's store with the day's articles in it, and the people who save them."""

    def __init__(
        self,
        day: Day,
        store: KnowledgeBaseStore,
        clock: SimulatedClock,
        imported: Imported,
        *,
        trace: Trace,
    ) -> None:
        self.day = day
        self.store = store
        self.clock = clock
        self.trace = trace
        self.knowledge_base_id = imported.knowledge_base_id
        self.article_ids = imported.article_ids
        self.index = {a: i for i, a in enumerate(self.article_ids)}
        self.history: dict[str, list[AppliedSave]] = defaultdict(list)
        self.current: dict[str, tuple[datetime, bool]] = {
            a: (v, True) for a, v in zip(imported.article_ids, imported.versions, strict=True)
        }
        if trace.enabled:
            for i, article_id in enumerate(self.article_ids):
                trace.write(
                    "article",
                    index=i,
                    rank=day.rank[i],
                    article_id=article_id,
                    title=day.titles[i],
                    content=day.contents[i],
                    updated_at=format_timestamp(self.current[article_id][0]),
                )

    def at(self, offset: int) -> None:
        """Move the simulated clock to `offset` µs after the day's start."""
        self.clock.set(self.day.instant(offset))

    def apply(self, save: Save) -> AppliedSave:
        self.at(save.at)
        kb, article_id = self.knowledge_base_id, self.article_ids[save.article]
        if save.kind == "unpublish":
            sequence = self.store.unpublish_article(kb, article_id)
        else:
            saved = self.store.save_article(kb, article_id, content=save.content, title=save.title)
            # None only for a save that changes nothing, and the day changes what it saves.
            assert saved is not None
            sequence = saved
        applied = AppliedSave(save.at, article_id, save.kind, self._recorded(sequence), sequence)
        self.history[article_id].append(applied)
        self.current[article_id] = (applied.updated_at, save.kind != "unpublish")
        if self.trace.enabled:
            self.trace.write(
                "save",
                at=format_timestamp(self.day.instant(save.at)),
                article=save.article,
                article_id=article_id,
                action=save.kind,
                title=save.title,
                content=save.content,
                updated_at=format_timestamp(applied.updated_at),
                sequence=sequence,
            )
        return applied

    def _recorded(self, sequence: int) -> datetime:
        """The timestamp of the event at `sequence`: the version the save produced."""
        ((_, event),) = self.store.logged_events(sequence - 1, limit=1)
        return event.timestamp

    def truth(self, article_id: str) -> tuple[datetime, bool]:
        """The article's current version and whether it is published. Only people write in a
        staleness run, so the last save's recorded version is the current one; tests compare
        this with the aggregates."""
        return self.current[article_id]

    def head(self) -> int:
        """The log's last notification id: unchanged means nothing was written."""
        return self.store.head()

    def close(self) -> None:
        self.store.close()
