"""The benchmark's yardstick: the same four tools written directly on `sqlite3`, the simplest
correct way, with no event sourcing.

One table of articles carrying `updated_at`, an idempotency table, an events table (the feed)
and an FTS5 index; each edit is one `BEGIN IMMEDIATE` transaction doing the compare-and-swap,
the receipt and the feed row together. Durability is kbes's default (WAL, `synchronous=FULL`),
so the ratio kbes/baseline measures the architecture, not a pragma. Never used by the product:
it exists so `kbes bench` has something honest to divide by.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS articles ("
    "seq INTEGER PRIMARY KEY, "
    "article_id TEXT NOT NULL UNIQUE, "
    "knowledge_base_id TEXT NOT NULL, "
    "title TEXT NOT NULL, "
    "content TEXT NOT NULL, "
    "published INTEGER NOT NULL, "
    "updated_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS idempotency ("
    "knowledge_base_id TEXT NOT NULL, "
    "idempotency_key TEXT NOT NULL, "
    "fingerprint TEXT NOT NULL, "
    "article_id TEXT NOT NULL, "
    "title TEXT NOT NULL, "
    "updated_at TEXT NOT NULL, "
    "PRIMARY KEY (knowledge_base_id, idempotency_key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS events ("
    "sequence INTEGER PRIMARY KEY, "
    "knowledge_base_id TEXT NOT NULL, "
    "article_id TEXT NOT NULL, "
    "type TEXT NOT NULL, "
    "updated_at TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS events_by_kb ON events (knowledge_base_id, sequence)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS articles_fts USING fts5("
    "title, content, tokenize='porter unicode61 remove_diacritics 2')",
)

SEARCH_SQL = (
    "SELECT a.article_id, a.title, a.updated_at, "
    "snippet(articles_fts, 1, '', '', '…', 24) AS snippet "
    "FROM articles_fts JOIN articles a ON a.seq = articles_fts.rowid "
    "WHERE articles_fts MATCH ? AND a.knowledge_base_id = ? "
    "ORDER BY bm25(articles_fts, 10.0, 1.0), a.seq LIMIT ?"
)

_WORD = re.compile(r"\w+", re.UNICODE)
_MICROSECOND = timedelta(microseconds=1)


class BaselineError(Exception):
    """A refused request, with the same stable codes as kbes's tools."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


@dataclass(frozen=True)
class EditOutcome:
    article_id: str
    title: str
    updated_at: str
    replay: bool


def stamp(instant: datetime) -> str:
    """RFC 3339 UTC with microseconds: fixed width, so text order is instant order."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def normalise(version: str) -> str:
    """Any RFC 3339 instant as the stored fixed-width text, so comparison is by instant."""
    instant = datetime.fromisoformat(version.replace("Z", "+00:00").replace("z", "+00:00"))
    if instant.tzinfo is None:
        raise BaselineError("invalid_argument", f"expected_version {version!r} has no offset")
    return stamp(instant)


def _next_stamp(previous: str | None) -> str:
    """`max(now, previous + 1 µs)`, as kbes's clock: one `updated_at` names one version."""
    now = datetime.now(tz=UTC)
    if previous is not None:
        floor = datetime.fromisoformat(previous.replace("Z", "+00:00")) + _MICROSECOND
        now = max(now, floor)
    return stamp(now)


def match_expression(query: str) -> str | None:
    """Every distinct word quoted and OR-ed: plain text, never FTS5 syntax."""
    terms = list(dict.fromkeys(_WORD.findall(query.lower())))[:32]
    return " OR ".join(f'"{t}"' for t in terms) if terms else None


class Baseline:
    """The four tools on one plain SQLite connection."""

    def __init__(self, path: str | Path, *, cache_mib: int = 64) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
        # The same durability and cache as kbes's default, so only the architecture differs.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(f"PRAGMA cache_size=-{cache_mib * 1024}")
        for statement in SCHEMA:
            self.db.execute(statement)

    def close(self) -> None:
        self.db.close()

    # Loading ----------------------------------------------------------------------------

    def create_knowledge_base(self) -> str:
        return str(uuid.uuid4())

    def add_articles(
        self, knowledge_base_id: str, drafts: Iterable[tuple[str, str]], *, published: bool = True
    ) -> list[str]:
        """Insert many articles in one transaction (and publish them: feed rows + index)."""
        ids: list[str] = []
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for title, content in drafts:
                article_id = str(uuid.uuid4())
                at = _next_stamp(None)
                cur = db.execute(
                    "INSERT INTO articles (article_id, knowledge_base_id, title, content, "
                    "published, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (article_id, knowledge_base_id, title, content, int(published), at),
                )
                if published:
                    db.execute(
                        "INSERT INTO articles_fts (rowid, title, content) VALUES (?, ?, ?)",
                        (cur.lastrowid, title, content),
                    )
                    db.execute(
                        "INSERT INTO events (knowledge_base_id, article_id, type, updated_at) "
                        "VALUES (?, ?, 'published', ?)",
                        (knowledge_base_id, article_id, at),
                    )
                ids.append(article_id)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return ids

    def unpublish(self, knowledge_base_id: str, article_id: str) -> str:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT seq, published, updated_at FROM articles "
                "WHERE article_id = ? AND knowledge_base_id = ?",
                (article_id, knowledge_base_id),
            ).fetchone()
            if row is None or not row[1]:
                raise BaselineError("not_found", f"no published article {article_id}")
            at = _next_stamp(row[2])
            db.execute(
                "UPDATE articles SET published = 0, updated_at = ? WHERE seq = ?", (at, row[0])
            )
            db.execute("DELETE FROM articles_fts WHERE rowid = ?", (row[0],))
            db.execute(
                "INSERT INTO events (knowledge_base_id, article_id, type, updated_at) "
                "VALUES (?, ?, 'unpublished', ?)",
                (knowledge_base_id, article_id, at),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return at

    # The tools --------------------------------------------------------------------------

    def read(self, knowledge_base_id: str, article_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT title, content, published, updated_at FROM articles "
            "WHERE article_id = ? AND knowledge_base_id = ?",
            (article_id, knowledge_base_id),
        ).fetchone()
        if row is None:
            raise BaselineError("not_found", f"no published article {article_id}")
        if not row[2]:
            raise BaselineError("gone", f"article {article_id} was unpublished", at=row[3])
        return {
            "article_id": article_id,
            "title": row[0],
            "content": row[1],
            "updated_at": row[3],
            "citation": {
                "knowledge_base_id": knowledge_base_id,
                "article_id": article_id,
                "updated_at": row[3],
            },
        }

    def search(self, knowledge_base_id: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self.db.execute(SEARCH_SQL, (expression, knowledge_base_id, limit)).fetchall()
        return [
            {
                "article_id": r[0],
                "title": r[1],
                "updated_at": r[2],
                "snippet": r[3],
                "citation": {
                    "knowledge_base_id": knowledge_base_id,
                    "article_id": r[0],
                    "updated_at": r[2],
                },
            }
            for r in rows
        ]

    def edit(
        self,
        knowledge_base_id: str,
        article_id: str,
        content: str,
        expected_version: str,
        idempotency_key: str,
        title: str | None = None,
    ) -> EditOutcome:
        """Compare-and-swap on `updated_at`, with an idempotency receipt, in one transaction."""
        expected = normalise(expected_version)
        fingerprint = hashlib.sha256(
            json.dumps([article_id, content, title, expected]).encode()
        ).hexdigest()
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            receipt = db.execute(
                "SELECT fingerprint, article_id, title, updated_at FROM idempotency "
                "WHERE knowledge_base_id = ? AND idempotency_key = ?",
                (knowledge_base_id, idempotency_key),
            ).fetchone()
            if receipt is not None:
                db.execute("ROLLBACK")
                if receipt[0] != fingerprint:
                    raise BaselineError("idempotency_key_reused", "key used for another edit")
                return EditOutcome(receipt[1], receipt[2], receipt[3], replay=True)
            row = db.execute(
                "SELECT seq, title, published, updated_at FROM articles "
                "WHERE article_id = ? AND knowledge_base_id = ?",
                (article_id, knowledge_base_id),
            ).fetchone()
            if row is None:
                raise BaselineError("not_found", f"no published article {article_id}")
            seq, old_title, published, current = row
            if not published:
                raise BaselineError("gone", f"article {article_id} was unpublished")
            if current != expected:
                raise BaselineError("version_conflict", "article changed", current_version=current)
            new_title = old_title if title is None else title
            at = _next_stamp(current)
            db.execute(
                "UPDATE articles SET title = ?, content = ?, updated_at = ? WHERE seq = ?",
                (new_title, content, at, seq),
            )
            db.execute(
                "UPDATE articles_fts SET title = ?, content = ? WHERE rowid = ?",
                (new_title, content, seq),
            )
            event_type = "retitled" if new_title != old_title else "saved"
            db.execute(
                "INSERT INTO events (knowledge_base_id, article_id, type, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (knowledge_base_id, article_id, event_type, at),
            )
            db.execute(
                "INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?)",
                (knowledge_base_id, idempotency_key, fingerprint, article_id, new_title, at),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return EditOutcome(article_id, new_title, at, replay=False)

    def poll(
        self, knowledge_base_id: str, after_sequence: int = 0, limit: int = 100
    ) -> dict[str, Any]:
        """A page of the feed after the cursor, and the cursor to resume from (one snapshot)."""
        db = self.db
        db.execute("BEGIN")
        try:
            rows = db.execute(
                "SELECT sequence, type, article_id, updated_at FROM events "
                "WHERE knowledge_base_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
                (knowledge_base_id, after_sequence, limit),
            ).fetchall()
            head = db.execute("SELECT MAX(sequence) FROM events").fetchone()[0] or 0
        finally:
            db.execute("ROLLBACK")
        events = [
            {"sequence": r[0], "type": r[1], "article_id": r[2], "updated_at": r[3]} for r in rows
        ]
        full = len(events) == limit
        return {
            "events": events,
            "next_sequence": events[-1]["sequence"] if full else max(head, after_sequence),
            "has_more": full,
        }
