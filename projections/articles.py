"""Current article state and version history, folded from the log: the catch-up and the
rebuild (projections/fold.py) feed every batch of events, live or in a replay, through one
`Batch`.

`status` is `draft` (never published), `published`, or `unpublished`. Only published rows are
searchable: each batch names the articles whose searchable state it changed, and the keyword
indexes (projections/keyword_index.py) follow from those names."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from kbes.domain.article import EVENT_TYPES, Article
from kbes.domain.clock import timestamp_text
from kbes.domain.knowledge_base import KnowledgeBase


def tables(suffix: str = "") -> tuple[str, ...]:
    """The view tables, named with `suffix`: a rebuild fills `_next` ones aside, then renames
    them in (projections/rebuild.py)."""
    return (
        f"CREATE TABLE IF NOT EXISTS view_knowledge_bases{suffix} ("
        "knowledge_base_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL"
        ") WITHOUT ROWID",
        f"CREATE TABLE IF NOT EXISTS view_articles{suffix} ("
        "seq INTEGER PRIMARY KEY, "
        "article_id TEXT NOT NULL UNIQUE, "
        "knowledge_base_id TEXT NOT NULL, "
        "title TEXT NOT NULL, "
        "content TEXT NOT NULL, "
        "status TEXT NOT NULL, "
        "version INTEGER NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "created_at TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS view_article_versions{suffix} ("
        "article_id TEXT NOT NULL, "
        "version INTEGER NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "type TEXT NOT NULL, "
        "notification_id INTEGER NOT NULL, "
        "PRIMARY KEY (article_id, version)) WITHOUT ROWID",
    )


INDEXES = (
    "CREATE INDEX IF NOT EXISTS view_articles_by_kb ON view_articles (knowledge_base_id, title)",
    "CREATE UNIQUE INDEX IF NOT EXISTS view_article_versions_by_time "
    "ON view_article_versions (article_id, updated_at)",
)
"""Secondary indexes, on the live tables only: a rebuild builds them after its switch."""

SCHEMA = (*tables(), *INDEXES)

TABLES = ("view_knowledge_bases", "view_articles", "view_article_versions")

REPLAY_INDEXES = ("view_article_versions_by_time",)
"""Secondary indexes a replay drops and builds once at the end: one sorted build instead of a
random insert per event."""


ROW = "seq, article_id, knowledge_base_id, title, content, status, version, updated_at, created_at"
SEQ, ARTICLE_ID, KB, TITLE, CONTENT, STATUS, VERSION, UPDATED_AT, CREATED_AT = range(9)
LOAD_CHUNK = 500

Item = tuple[type, str, int, Any, int]
"""One event to fold: its class, originator id (canonical UUID text), originator version, an
object with the event's attributes (the domain event, or the mapper's decoded fields), and its
notification id."""


def searchable(row: list[Any]) -> tuple[str, str, str] | None:
    """What an article's keyword document holds while it is published: its title, its
    content and the version a hit cites; None when it is not."""
    if row[STATUS] != "published":
        return None
    return (row[TITLE], row[CONTENT], row[UPDATED_AT])


class Batch:
    """Events folded into the views' rows in memory, then written at once: each article's row
    is read once (in bulk), folded, and written once, and its searchable state compared once,
    before the batch and after. Every article event still gets its version
    row. The result is the same as folding each event on its own, in log order.

    A batch may be fed several chunks of events before it is written (a replay of a long log
    writes many thousands of events at a time: each B-tree page is then rewritten once for many
    rows)."""

    def __init__(self, suffix: str = "") -> None:
        """`suffix`: the tables' (a rebuild's `_next` tables, built aside)."""
        self.suffix = suffix
        self.versions: list[tuple[Any, ...]] = []
        self.created: list[tuple[str, str, str]] = []
        self.rows: dict[str, list[Any]] = {}
        self.before: dict[str, tuple[str, str, str] | None] = {}
        """Each loaded article's searchable state: what its keyword document holds (title,
        content and the version a hit cites) while published, None otherwise."""
        self.titles: dict[str, str] = {}
        self.drafted: list[str] = []
        self.existing: list[str] = []
        self.changed: list[tuple[str, str]] = []
        """(knowledge base, article) whose searchable state the batch changed."""
        self.events = 0
        self.bytes = 0
        """A rough size of what the batch holds in memory, to bound it."""

    def add(self, c: Any, items: Sequence[Item]) -> None:
        """Fold `items` (in log order) into the batch; reads rows it has not seen yet."""
        rows = self.rows
        wanted: list[str] = []
        for cls, oid, _, _, _ in items:
            if oid not in rows and cls in EVENT_TYPES:
                rows[oid] = []  # a draft's row is made below; others are read first
                if cls is not Article.Drafted:
                    wanted.append(oid)
        for i in range(0, len(wanted), LOAD_CHUNK):
            chunk = wanted[i : i + LOAD_CHUNK]
            c.execute(
                f"SELECT {ROW} FROM view_articles{self.suffix} "
                f"WHERE article_id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for row in c.fetchall():
                loaded = list(row)
                oid = loaded[ARTICLE_ID]
                rows[oid] = loaded
                self.existing.append(oid)
                self.titles[oid] = loaded[TITLE]
                self.before[oid] = searchable(loaded)
                self.bytes += len(loaded[CONTENT]) + len(loaded[TITLE]) + 200
        versions = self.versions
        for cls, oid, version, fields, nid in items:
            if cls not in EVENT_TYPES:  # the article events
                if cls is KnowledgeBase.Created:
                    self.created.append((oid, fields.name, timestamp_text(fields.timestamp)))
                continue
            updated_at = timestamp_text(fields.timestamp)
            versions.append((oid, version, updated_at, EVENT_TYPES[cls], nid))
            if cls is Article.Drafted:
                rows[oid] = [
                    None,
                    oid,
                    str(fields.knowledge_base_id),
                    fields.title,
                    fields.content,
                    "draft",
                    version,
                    updated_at,
                    updated_at,
                ]
                self.drafted.append(oid)
                self.bytes += len(fields.content) + len(fields.title) + 200
                continue
            row = rows[oid]
            if cls is Article.Published:
                row[STATUS] = "published"
            elif cls is Article.Unpublished:
                row[STATUS] = "unpublished"
            else:
                row[CONTENT] = fields.content
                if cls is Article.Retitled:
                    row[TITLE] = fields.title
            row[VERSION] = version
            row[UPDATED_AT] = updated_at
        self.events += len(items)
        self.bytes += 160 * len(items)

    def write(self, c: Any, *, track_changes: bool = True) -> None:
        """Write the batch (inside the caller's transaction) and, with `track_changes`, note in
        `changed` which articles it changed for search; a replay does not: the keyword indexes
        are built whole after it."""
        rows, s = self.rows, self.suffix
        if self.created:
            c.executemany(f"INSERT INTO view_knowledge_bases{s} VALUES (?, ?, ?)", self.created)
        if self.versions:  # in key order: each B-tree page is visited once per batch
            self.versions.sort(key=itemgetter(0))  # stable: an article's versions stay in order
            c.executemany(
                f"INSERT INTO view_article_versions{s} VALUES (?, ?, ?, ?, ?)", self.versions
            )
        if self.drafted:
            # The seq an INTEGER PRIMARY KEY would get, in draft order: the order search
            # breaks ties by.
            c.execute(f"SELECT COALESCE(MAX(seq), 0) FROM view_articles{s}")
            seq = c.fetchone()[0]
            for oid in self.drafted:
                seq += 1
                rows[oid][SEQ] = seq
            c.executemany(
                f"INSERT INTO view_articles{s} ({ROW}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [rows[oid] for oid in self.drafted],
            )
        same_title, new_title = [], []
        self.existing.sort(key=lambda oid: rows[oid][SEQ])
        for oid in self.existing:
            row = rows[oid]
            values = (row[CONTENT], row[STATUS], row[VERSION], row[UPDATED_AT], row[SEQ])
            if row[TITLE] == self.titles[oid]:
                same_title.append(values)
            else:
                new_title.append((row[TITLE], *values))
        if same_title:  # leaves the (knowledge_base_id, title) index alone
            c.executemany(
                f"UPDATE view_articles{s} SET content = ?, status = ?, version = ?, "
                "updated_at = ? WHERE seq = ?",
                same_title,
            )
        if new_title:
            c.executemany(
                f"UPDATE view_articles{s} SET title = ?, content = ?, status = ?, version = ?, "
                "updated_at = ? WHERE seq = ?",
                new_title,
            )
        if not track_changes:
            return
        for row in rows.values():
            if not row:
                continue
            # The version too: an article unpublished and published again in one batch holds
            # the same words, but a hit must cite its new version.
            if self.before.get(row[ARTICLE_ID]) != searchable(row):
                self.changed.append((row[KB], row[ARTICLE_ID]))
