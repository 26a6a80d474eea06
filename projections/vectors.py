"""The vector projection: which published article holds which text (by content hash), and the
embedding cache, keyed by model and content hash, in the views' SQLite file.

- `vector_articles`: one row per article ever published, its knowledge base and the sha256 of
  its embedded text (projections/embedder.py `document_text`), NULL once it is no longer
  published (a tombstone other processes' in-memory indexes read as "remove"). `changed`
  numbers the sync that last wrote the row, so each process reads only what is new.
- `embeddings`: one vector per (model, content hash), never updated, never deleted by a
  rebuild: `kbes rebuild` replaces the view tables only, and the sync after it finds every
  unchanged text's vector here. An `id` that only grows lets a process read only new vectors.

The sync follows the article view, which the caller has just caught up: it reads which
articles the log's new events touched (the ids only), then their rows in the view. Views
that moved back (a drop, a repair) or far ahead are synced whole, by comparing hashes. Each
sync is one transaction with its tracking row, so a process killed part-way leaves nothing
half-written and the next sync starts from the last committed position; rows are set, never
added to, so a sync applied twice leaves what one leaves."""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Iterable
from typing import Any

from kbes.projections import tracking
from kbes.projections.embedder import DIMENSIONS, document_text
from kbes.projections.source import LogReader

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vector_articles ("
    "article_id TEXT PRIMARY KEY, knowledge_base_id TEXT NOT NULL, content_hash BLOB, "
    "changed INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS vector_articles_by_change ON vector_articles (changed)",
    "CREATE INDEX IF NOT EXISTS vector_articles_by_kb "
    "ON vector_articles (knowledge_base_id, content_hash)",
    "CREATE TABLE IF NOT EXISTS embeddings ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, content_hash BLOB NOT NULL, "
    "vector BLOB NOT NULL, UNIQUE (model, content_hash))",
)
TRACKING_SUFFIX = ".vectors"
"""The tracking row of the vector projection: the view position it last synced from."""
WHOLE_SYNC = 20_000
"""Events behind above which the sync compares every article instead of reading the log."""
LOG_CHUNK = 5_000
UNIT_TOLERANCE = 1e-3
"""How far from 1 a stored vector's length may be: every embedder gives unit vectors."""


def content_hash(title: str, content: str) -> bytes:
    return hashlib.sha256(document_text(title, content).encode()).digest()


def create(c: Any) -> None:
    for statement in SCHEMA:
        c.execute(statement)


def tracked(c: Any, name: str) -> int | None:
    """The view position the vector projection last synced from."""
    return tracking.position(c, name + TRACKING_SUFFIX)


def sync(c: Any, log: LogReader, name: str, position: int) -> int:
    """Bring `vector_articles` to the article view at `position` (inside the caller's write
    transaction, on views caught up to `position`); returns how many rows it changed."""
    last = tracked(c, name)
    if last is not None and last == position:
        return 0
    if last is None or last > position or position - last > WHOLE_SYNC:
        ids = None
    else:
        ids = touched(log, last + 1, position)
    changed = _write(c, _rows(c, ids), whole=ids is None)
    tracking.set_position(c, name + TRACKING_SUFFIX, position)
    return changed


def touched(log: LogReader, start: int, stop: int) -> set[str]:
    """The originator ids of the log's events from `start` to `stop`."""
    ids: set[str] = set()
    while start <= stop:
        rows = log.select_notification_rows(start, LOG_CHUNK, stop)
        if not rows:
            break
        ids.update(row[1] for row in rows)
        start = rows[-1][0] + 1
    return ids


def _rows(c: Any, ids: set[str] | None) -> Iterable[tuple[str, str, bytes | None]]:
    """(article id, knowledge base id, hash or None) of the articles `ids` (every article when
    None) as the view holds them."""
    sql = "SELECT article_id, knowledge_base_id, title, content, status FROM view_articles"
    if ids is None:
        c.execute(sql)
        found = c.fetchall()
    else:
        found = []
        chunk = sorted(ids)
        for i in range(0, len(chunk), 500):
            part = chunk[i : i + 500]
            c.execute(f"{sql} WHERE article_id IN ({','.join('?' * len(part))})", part)
            found.extend(c.fetchall())
    for article_id, kb, title, content, status in found:
        yield article_id, kb, content_hash(title, content) if status == "published" else None


def _write(c: Any, rows: Iterable[tuple[str, str, bytes | None]], *, whole: bool) -> int:
    c.execute("SELECT article_id, content_hash FROM vector_articles")
    before = dict(c.fetchall()) if whole else None
    c.execute("SELECT COALESCE(MAX(changed), 0) + 1 FROM vector_articles")
    stamp = c.fetchone()[0]
    changes = []
    seen: set[str] = set()
    for article_id, kb, digest in rows:
        seen.add(article_id)
        if before is not None:
            old = before.get(article_id, b"")
        else:
            c.execute(
                "SELECT content_hash FROM vector_articles WHERE article_id = ?", (article_id,)
            )
            row = c.fetchone()
            old = row[0] if row else b""
        if old != digest and not (digest is None and old == b""):
            changes.append((article_id, kb, digest, stamp))
    if before is not None:  # articles gone from the view (a log rebuilt without them)
        c.execute("SELECT article_id, knowledge_base_id FROM vector_articles")
        for article_id, kb in c.fetchall():
            if article_id not in seen and before[article_id] is not None:
                changes.append((article_id, kb, None, stamp))
    c.executemany("INSERT OR REPLACE INTO vector_articles VALUES (?, ?, ?, ?)", changes)
    return len(changes)


def pending(c: Any, model: str, after: str, limit: int) -> list[Any]:
    """(article id, title, content) of up to `limit` published articles after the article id
    `after`, in id order, whose text `model` has not embedded yet: a walk of the table by its
    key, so embedding a whole knowledge base reads each row once."""
    c.execute(
        "SELECT v.article_id, a.title, a.content FROM vector_articles v "
        "JOIN view_articles a ON a.article_id = v.article_id "
        "WHERE v.article_id > ? AND v.content_hash IS NOT NULL AND NOT EXISTS ("
        "SELECT 1 FROM embeddings e WHERE e.model = ? AND e.content_hash = v.content_hash) "
        "ORDER BY v.article_id LIMIT ?",
        (after, model, limit),
    )
    return c.fetchall()


def count_pending(c: Any, model: str) -> int:
    c.execute(
        "SELECT COUNT(*) FROM vector_articles v "
        "WHERE v.content_hash IS NOT NULL AND NOT EXISTS (SELECT 1 FROM embeddings e "
        "WHERE e.model = ? AND e.content_hash = v.content_hash)",
        (model,),
    )
    return int(c.fetchone()[0])


def sound(blob: bytes | None) -> bool:
    """Whether a stored vector can be what an embedder gave: DIMENSIONS finite float32s of
    unit length. A damaged cache row fails this, and is embedded again rather than trusted:
    the content hash that keys it says nothing of the vector (issue 35)."""
    if blob is None or len(blob) != DIMENSIONS * 4:
        return False
    values = array("f", blob)
    length = math.fsum(v * v for v in values)
    return math.isfinite(length) and abs(length - 1.0) <= 2 * UNIT_TOLERANCE


def store_embeddings(c: Any, model: str, vectors: Iterable[tuple[bytes, bytes]]) -> None:
    """(hash, float32 bytes) pairs; a vector another process stored first is kept, unless it
    is not `sound` (a damaged row): that one is replaced, under a new id, so every process's
    index reads the new vector at its next refresh."""
    pairs = [(model, digest, blob) for digest, blob in vectors]
    for _, digest, _ in pairs:
        c.execute(
            "SELECT id, vector FROM embeddings WHERE model = ? AND content_hash = ?",
            (model, digest),
        )
        row = c.fetchone()
        if row is not None and not sound(row[1]):
            c.execute("DELETE FROM embeddings WHERE id = ?", (row[0],))
    c.executemany(
        "INSERT OR IGNORE INTO embeddings (model, content_hash, vector) VALUES (?, ?, ?)", pairs
    )


def discard_unsound(c: Any) -> int:
    """Delete every cached vector that is not `sound` (inside a rebuild's transaction): the
    texts are embedded again as any new text is. How many were deleted."""
    c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'")
    if c.fetchone() is None:
        return 0
    c.execute("SELECT id, vector FROM embeddings")
    damaged = [(row[0],) for row in c.fetchall() if not sound(row[1])]
    c.executemany("DELETE FROM embeddings WHERE id = ?", damaged)
    return len(damaged)


__all__ = [
    "content_hash",
    "count_pending",
    "create",
    "discard_unsound",
    "pending",
    "sound",
    "store_embeddings",
    "sync",
    "touched",
    "tracked",
]
