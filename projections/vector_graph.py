"""An HNSW graph (usearch) over one knowledge base's vectors, for knowledge bases too large to
search exactly at speed (`Settings.hnsw_threshold`; docs/search.md).

The exact index (projections/vector_index.py) stays the truth of which published article has
which vector: the graph follows it. Filling a graph takes minutes at 100,000 vectors, so it is
never filled in a search: it is saved beside the views file, one file per knowledge base and
model (`<views file>.vectors/<kb>.<model>.usearch`), naming the content hash of every vector it
holds and the vector projection's marks it was written at. A process loads that file and
brings it forward by comparing it with the exact index once (add the vectors changed since,
remove those gone); from then on it applies the articles each refresh touched. With no file, a
search answers exactly while a thread fills the graph and saves it.

A save writes a temporary file and renames it over the old one, so a crash leaves the old file
whole, and of processes saving at once the last complete writer wins. A reader trusts the file
for nothing it does not check: its model and knowledge base must match, and the comparison
with the exact index corrects whatever position it was written at. In-memory and throwaway
views keep their graphs in memory.

usearch is pinned below 2.26.2: imported before onnxruntime, 2.26.2 and later crash the
process when onnxruntime loads (pyproject.toml)."""

from __future__ import annotations

import json
import os
import re
import struct
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kbes.projections.embedder import DIMENSIONS

if TYPE_CHECKING:
    from kbes.projections.vector_index import KnowledgeBaseVectors

EXPANSION_SEARCH = 256
"""usearch's search breadth: recall@10 against exact search is bench row 12f."""
EXPANSION_ADD = 128
CONNECTIVITY = 16
SAVE_EVERY = 1_000
"""Changes a process applies to a loaded graph before it saves it again."""
BUILD_THREADS = 2
PARALLEL_FROM = 10_000
"""Vectors one add must hold before it is shared among `BUILD_THREADS`: inserts racing in a
small graph can leave a vector no search reaches (seen in tests/test_vector_graph.py's graph of
200), and below this one thread adds them in about two seconds."""
MAGIC = b"KBES-HNSW-1\n"


class GraphFileError(Exception):
    """A saved graph that cannot be used (another format, a damaged file)."""


class VectorGraph:
    """One knowledge base's HNSW graph and which article each key holds."""

    def __init__(self, model: str, knowledge_base_id: str, index: Any | None = None) -> None:
        from usearch.index import Index

        self.model = model
        self.knowledge_base_id = knowledge_base_id
        self.index = index or Index(
            ndim=DIMENSIONS,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        # A restored index comes back at usearch's default breadth (64), not the one it was
        # made with; the property has a setter its type stubs do not declare.
        self.index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        self.keys: dict[str, int] = {}
        self.articles: dict[int, str] = {}
        self.hashes: dict[str, bytes] = {}
        """The content hash of the vector the graph holds for each article."""
        self.next_key = 0
        self.marks = (0, 0)
        """The vector projection's (changed, embedded) marks the graph was last brought to."""
        self.unsaved = 0

    def __len__(self) -> int:
        return len(self.keys)

    def follow(
        self,
        base: KnowledgeBaseVectors,
        hashes: dict[str, bytes],
        articles: set[str] | None = None,
        threads: int = 1,
    ) -> int:
        """Make the graph hold what `base` holds for `articles` (every article when None):
        each valid vector whose hash differs or is missing is added, each vector `base` no
        longer has is removed. Returns how many it changed."""
        removed: list[int] = []
        added_keys: list[int] = []
        added_rows: list[Any] = []
        names = set(base.slots) | set(self.keys) if articles is None else articles
        for article_id in names:
            slot = base.slots.get(article_id)
            digest = hashes.get(article_id) if slot is not None and base.valid[slot] else None
            if digest is not None and self.hashes.get(article_id) == digest:
                continue
            old = self.keys.pop(article_id, None)
            if old is not None:
                removed.append(old)
                del self.articles[old]
                del self.hashes[article_id]
            if digest is not None and slot is not None:
                key = self.next_key
                self.next_key += 1
                self.keys[article_id] = key
                self.articles[key] = article_id
                self.hashes[article_id] = digest
                added_keys.append(key)
                added_rows.append(base.matrix[slot])
        if removed:
            self.index.remove(np.array(removed, dtype=np.uint64))
        if added_keys:
            self.add(np.array(added_keys, dtype=np.uint64), np.stack(added_rows), threads)
        changes = len(removed) + len(added_keys)
        self.unsaved += changes
        return changes

    def add(self, keys: Any, rows: Any, threads: int) -> None:
        """Insert `rows` under `keys`, on `threads` only from `PARALLEL_FROM` rows."""
        self.index.add(keys, rows, threads=threads if len(keys) >= PARALLEL_FROM else 1)

    def search(self, query: Any, limit: int, base: KnowledgeBaseVectors) -> list[tuple[str, float]]:
        """The `limit` nearest articles by the graph, best first, each still a valid vector of
        `base` (the published set as the exact index holds it)."""
        if limit < 1 or not self.keys:
            return []
        matches = self.index.search(query, min(limit, len(self.keys)), threads=1)
        out = []
        for key, distance in zip(matches.keys.tolist(), matches.distances.tolist(), strict=True):
            article_id = self.articles.get(key)
            slot = None if article_id is None else base.slots.get(article_id)
            if article_id is not None and slot is not None and base.valid[slot]:
                out.append((article_id, 1.0 - float(distance)))
        return out

    # The saved file ----------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the graph to `path` whole or not at all (a temporary file, then a rename)."""
        header = json.dumps(
            {
                "model": self.model,
                "knowledge_base_id": self.knowledge_base_id,
                "marks": list(self.marks),
                "next_key": self.next_key,
                "articles": [[a, k, self.hashes[a].hex()] for a, k in self.keys.items()],
            }
        ).encode()
        body = self.index.save()
        if body is None:
            raise GraphFileError(f"usearch wrote no bytes for {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + struct.pack("<Q", len(header)) + header)
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self.unsaved = 0

    @classmethod
    def load(cls, path: Path, model: str, knowledge_base_id: str) -> VectorGraph:
        """The graph saved at `path`, if it is of `model` and `knowledge_base_id`."""
        from usearch.index import Index

        try:
            data = path.read_bytes()
            if not data.startswith(MAGIC):
                raise GraphFileError(f"{path} is not a kbes HNSW file")
            start = len(MAGIC) + 8
            (size,) = struct.unpack("<Q", data[len(MAGIC) : start])
            header = json.loads(data[start : start + size])
            if header["model"] != model or header["knowledge_base_id"] != knowledge_base_id:
                raise GraphFileError(f"{path} holds another model or knowledge base")
            index = Index.restore(memoryview(data)[start + size :])
        except (OSError, ValueError, KeyError, RuntimeError, struct.error) as error:
            raise GraphFileError(f"{path}: {error}") from error
        if index is None or index.ndim != DIMENSIONS:
            raise GraphFileError(f"{path} holds no index of {DIMENSIONS} dimensions")
        graph = cls(model, knowledge_base_id, index)
        graph.marks = (int(header["marks"][0]), int(header["marks"][1]))
        graph.next_key = int(header["next_key"])
        for article_id, key, digest in header["articles"]:
            graph.keys[article_id] = key
            graph.articles[key] = article_id
            graph.hashes[article_id] = bytes.fromhex(digest)
        if len(graph.keys) != len(index):
            raise GraphFileError(f"{path}: {len(graph.keys)} articles, {len(index)} vectors")
        return graph


class VectorGraphs:
    """The graphs of one process's vector index: which are loaded, which are being filled,
    where they are saved (`root`, None: in memory)."""

    def __init__(self, model: str, root: Path | None, threshold: int) -> None:
        self.model = model
        self.root = root
        self.threshold = threshold
        self.graphs: dict[str, VectorGraph] = {}
        self.building: dict[str, threading.Thread] = {}
        self.built: dict[str, VectorGraph] = {}
        self.failed: dict[str, BaseException] = {}
        self._lock = threading.Lock()
        """Guards `built` and `failed`, which the filling threads write."""

    def path(self, knowledge_base_id: str) -> Path | None:
        if self.root is None:
            return None
        model = re.sub(r"[^A-Za-z0-9_.-]", "_", self.model)
        return self.root / f"{knowledge_base_id}.{model}.usearch"

    def search(
        self,
        kb: str,
        base: KnowledgeBaseVectors,
        hashes: dict[str, bytes],
        marks: tuple[int, int],
        query: Any,
        limit: int,
    ) -> list[tuple[str, float]]:
        """By the graph once `base` holds `threshold` vectors and a graph is ready, else
        exactly. The caller holds the vector index's lock and has just refreshed `base`."""
        if len(base) < self.threshold:
            base.touched.clear()
            return base.search(query, limit)
        graph = self.ready(kb, base, hashes, marks, wait=False)
        if graph is None:
            return base.search(query, limit)
        return graph.search(query, limit, base)

    def ready(
        self,
        kb: str,
        base: KnowledgeBaseVectors,
        hashes: dict[str, bytes],
        marks: tuple[int, int],
        *,
        wait: bool,
    ) -> VectorGraph | None:
        """The knowledge base's graph brought to `base`: loaded, saved or filled (in a thread,
        None meanwhile, unless `wait`)."""
        graph = self.graphs.get(kb)
        if graph is not None:
            graph.follow(base, hashes, base.touched)
            base.touched.clear()
        else:
            graph = self._take(kb, base, hashes, wait=wait)
            if graph is None:
                return None
            graph.follow(base, hashes, threads=BUILD_THREADS)
            base.touched.clear()
            self.graphs[kb] = graph
        graph.marks = marks
        path = self.path(kb)
        if path is not None and (graph.unsaved >= SAVE_EVERY or (wait and graph.unsaved)):
            graph.save(path)
        return graph

    def _take(
        self, kb: str, base: KnowledgeBaseVectors, hashes: dict[str, bytes], *, wait: bool
    ) -> VectorGraph | None:
        """A saved graph, or one a thread filled; else start the thread."""
        with self._lock:
            built = self.built.pop(kb, None)
            error = self.failed.pop(kb, None)
        if error is not None:
            raise error
        if built is not None:
            self.building.pop(kb, None)
            return built
        thread = self.building.get(kb)
        if thread is None:
            path = self.path(kb)
            if path is not None and path.exists():
                try:
                    return VectorGraph.load(path, self.model, kb)
                except GraphFileError:
                    pass  # filled again below, and saved over it
            thread = self._fill(kb, base, hashes)
        if not wait:
            return None
        thread.join()
        return self._take(kb, base, hashes, wait=True)

    def _fill(
        self, kb: str, base: KnowledgeBaseVectors, hashes: dict[str, bytes]
    ) -> threading.Thread:
        """A thread filling a new graph from a copy of `base` as it is now, and saving it;
        the search that takes it brings it forward from there."""
        n = len(base.ids)
        rows = np.flatnonzero(base.valid[:n])
        ids = [base.ids[i] for i in rows]
        vectors = base.matrix[rows].copy()
        digests = [None if a is None else hashes.get(a) for a in ids]
        path = self.path(kb)

        def run() -> None:
            try:
                graph = VectorGraph(self.model, kb)
                keep = [i for i, d in enumerate(digests) if d is not None and ids[i] is not None]
                for key, i in enumerate(keep):
                    article_id = ids[i]
                    digest = digests[i]
                    assert article_id is not None and digest is not None
                    graph.keys[article_id] = key
                    graph.articles[key] = article_id
                    graph.hashes[article_id] = digest
                graph.next_key = len(keep)
                if keep:
                    graph.add(np.arange(len(keep), dtype=np.uint64), vectors[keep], BUILD_THREADS)
                if path is not None:
                    graph.save(path)
                with self._lock:
                    self.built[kb] = graph
            except BaseException as error:  # handed to the next search of the knowledge base
                with self._lock:
                    self.failed[kb] = error

        thread = threading.Thread(target=run, name=f"kbes-hnsw-{kb}", daemon=True)
        self.building[kb] = thread
        thread.start()
        return thread


__all__ = ["EXPANSION_SEARCH", "GraphFileError", "VectorGraph", "VectorGraphs"]
