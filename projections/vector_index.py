"""One process's in-memory vector index over the vector projection (projections/vectors.py):
per knowledge base, a matrix of its published articles' unit vectors, searched exactly (one
matrix-vector product and a partial sort, numpy).

A knowledge base is loaded whole at its first search, then kept current by `refresh`, which
reads in one snapshot only what other syncs and embeddings added since the last one (the
`changed` and `id` marks). Articles whose text has no vector yet are `pending`: absent from
the vector results (the keyword half still finds them) until the text is embedded."""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from kbes.projections import vectors
from kbes.projections.embedder import DIMENSIONS

BLAS = ThreadpoolController()
"""One BLAS thread for a search: OpenBLAS's threads, woken for one matrix-vector product on a
busy machine, cost 5-12 ms where one thread takes 0.1 ms (2,000 vectors; docs/search.md)."""


class KnowledgeBaseVectors:
    """The vectors of one knowledge base's published articles, one row each (slot)."""

    def __init__(self) -> None:
        self.matrix = np.zeros((64, DIMENSIONS), dtype=np.float32)
        self.valid = np.zeros(64, dtype=bool)
        self.ids: list[str | None] = []
        self.slots: dict[str, int] = {}
        self.free: list[int] = []
        self.touched: set[str] = set()
        """Articles put or removed since the HNSW graph last followed (projections/
        vector_graph.py): what it has to apply, without comparing every article."""

    def reserve(self, rows: int) -> None:
        """Room for `rows` vectors without growing (a knowledge base loaded whole)."""
        if rows > len(self.valid):
            grown = np.zeros((rows, DIMENSIONS), dtype=np.float32)
            grown[: len(self.valid)] = self.matrix
            self.matrix = grown
            self.valid = np.concatenate([self.valid, np.zeros(rows - len(self.valid), bool)])

    def __len__(self) -> int:
        return int(self.valid[: len(self.ids)].sum())

    def waiting(self) -> int:
        """Published articles known here whose text has no vector yet."""
        return len(self.slots) - len(self)

    def put(self, article_id: str, vector: Any | None) -> None:
        """The article's vector (None: the article stays known but is not searched)."""
        self.touched.add(article_id)
        slot = self.slots.get(article_id)
        if slot is None:
            if self.free:
                slot = self.free.pop()
                self.ids[slot] = article_id
            else:
                slot = len(self.ids)
                self.ids.append(article_id)
                if slot == len(self.valid):
                    self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
                    self.valid = np.concatenate([self.valid, np.zeros_like(self.valid)])
            self.slots[article_id] = slot
        if vector is None:
            self.valid[slot] = False
        else:
            self.matrix[slot] = vector
            self.valid[slot] = True

    def remove(self, article_id: str) -> None:
        self.touched.add(article_id)
        slot = self.slots.pop(article_id, None)
        if slot is not None:
            self.valid[slot] = False
            self.ids[slot] = None
            self.free.append(slot)

    def search(self, query: Any, limit: int) -> list[tuple[str, float]]:
        """The `limit` nearest articles by cosine similarity, best first."""
        n = len(self.ids)
        if n == 0 or limit < 1:
            return []
        with BLAS.limit(limits=1, user_api="blas"):
            scores = self.matrix[:n] @ query
        scores[~self.valid[:n]] = -np.inf
        top = min(limit, n)
        best = np.argpartition(-scores, top - 1)[:top] if top < n else np.arange(n)
        best = best[np.argsort(-scores[best], kind="stable")]
        out = []
        for slot in best:
            if not np.isfinite(scores[slot]):
                break
            article_id = self.ids[slot]
            if article_id is not None:
                out.append((article_id, float(scores[slot])))
        return out


class VectorIndex:
    """Every loaded knowledge base's vectors for one model, and what is pending."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.bases: dict[str, KnowledgeBaseVectors] = {}
        self.hashes: dict[str, bytes] = {}
        """The content hash of each article of a loaded knowledge base."""
        self.pending: dict[bytes, set[tuple[str, str]]] = {}
        """Hash -> the (knowledge base, article) waiting for its vector."""
        self.changed = 0
        self.embedded = 0

    def marks(self, c: Any) -> tuple[int, int]:
        c.execute("SELECT COALESCE(MAX(changed), 0) FROM vector_articles")
        changed = int(c.fetchone()[0])
        c.execute("SELECT COALESCE(MAX(id), 0) FROM embeddings")
        return changed, int(c.fetchone()[0])

    def load(self, c: Any, knowledge_base_id: str) -> KnowledgeBaseVectors:
        """The knowledge base's vectors, read whole (inside a read snapshot) if not loaded."""
        base = self.bases.get(knowledge_base_id)
        if base is not None:
            return base
        if not self.bases:
            self.changed, self.embedded = self.marks(c)
        base = self.bases[knowledge_base_id] = KnowledgeBaseVectors()
        c.execute(
            "SELECT COUNT(*) FROM vector_articles WHERE knowledge_base_id = ? "
            "AND content_hash IS NOT NULL",
            (knowledge_base_id,),
        )
        base.reserve(int(c.fetchone()[0]))
        c.execute(
            "SELECT v.article_id, v.content_hash, e.vector FROM vector_articles v "
            "LEFT JOIN embeddings e ON e.model = ? AND e.content_hash = v.content_hash "
            "WHERE v.knowledge_base_id = ? AND v.content_hash IS NOT NULL",
            (self.model, knowledge_base_id),
        )
        for article_id, digest, blob in c.fetchall():
            self._set(knowledge_base_id, article_id, digest, blob)
        base.touched.clear()  # a graph taken up later compares every article once
        return base

    def refresh(self, c: Any) -> None:
        """Apply what syncs and embeddings committed since the last refresh (one snapshot)."""
        if not self.bases:
            return
        changed, embedded = self.marks(c)
        if embedded > self.embedded:
            c.execute(
                "SELECT content_hash, vector FROM embeddings WHERE id > ? AND id <= ? "
                "AND model = ?",
                (self.embedded, embedded, self.model),
            )
            for digest, blob in c.fetchall():
                vector = _vector(blob)
                if vector is None:
                    continue  # a damaged row: the articles stay pending, to be embedded again
                for kb, article_id in self.pending.pop(digest, ()):
                    if self.hashes.get(article_id) == digest and kb in self.bases:
                        self.bases[kb].put(article_id, vector)
        if changed > self.changed:
            c.execute(
                "SELECT v.article_id, v.knowledge_base_id, v.content_hash, e.vector "
                "FROM vector_articles v LEFT JOIN embeddings e "
                "ON e.model = ? AND e.content_hash = v.content_hash "
                "WHERE v.changed > ? AND v.changed <= ?",
                (self.model, self.changed, changed),
            )
            for article_id, kb, digest, blob in c.fetchall():
                if kb in self.bases:
                    self._set(kb, article_id, digest, blob)
        self.changed, self.embedded = changed, embedded

    def _set(self, kb: str, article_id: str, digest: bytes | None, blob: bytes | None) -> None:
        old = self.hashes.pop(article_id, None)
        if old is not None:
            waiting = self.pending.get(old)
            if waiting is not None:
                waiting.discard((kb, article_id))
                if not waiting:
                    del self.pending[old]
        if digest is None:
            self.bases[kb].remove(article_id)
            return
        self.hashes[article_id] = digest
        vector = None if blob is None else _vector(blob)
        if vector is None:  # no vector yet, or a damaged one: pending, to be embedded again
            self.pending.setdefault(digest, set()).add((kb, article_id))
            self.bases[kb].put(article_id, None)
        else:
            self.bases[kb].put(article_id, vector)

    def waiting(self, knowledge_base_id: str, limit: int) -> list[str]:
        """Up to `limit` articles of the knowledge base whose text has no vector yet."""
        out: list[str] = []
        for members in self.pending.values():
            for kb, article_id in members:
                if kb == knowledge_base_id:
                    out.append(article_id)
                    break
            if len(out) >= limit:
                break
        return out


def _vector(blob: bytes) -> Any | None:
    """The stored vector, or None if it cannot be an embedder's (`vectors.sound`, checked
    here at numpy's speed): a damaged cache row would reorder every hybrid search."""
    if len(blob) != DIMENSIONS * 4:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    length = float(vector @ vector)
    if not np.isfinite(length) or abs(length - 1.0) > 2 * vectors.UNIT_TOLERANCE:
        return None
    return vector


__all__ = ["KnowledgeBaseVectors", "VectorIndex"]
