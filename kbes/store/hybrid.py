"""Hybrid search: the keyword search (kbes.store.queries, whatever engine it runs) and the
vector projection's nearest articles, fused by reciprocal rank (kbes.projections.hybrid). The
store searches with it when `Settings.search == "hybrid"`, and with the keyword search alone
otherwise (kbes.store.application).

Embedding lags a save by design (docs/search.md): a search embeds the waiting articles of its
knowledge base first when at most `EMBED_PER_SEARCH` wait (a save is found by meaning at the
next search), else up to that many, or none when a background thread embeds the backlog
(`kbes serve --search hybrid`, kbes.store.embedding). While any published article of the
knowledge base waits, the search answers by words alone: a fused ranking missing some vectors
ranks below keywords. `embed_pending` embeds every waiting article at once (`kbes import
--search hybrid`, `kbes embed`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from kbes.projections import hybrid, vectors
from kbes.projections.embedder import Embedder, document_text, require, shared_model
from kbes.projections.views import Views
from kbes.store.event_log import EventLog
from kbes.store.knowledge_bases import KnownKnowledgeBases
from kbes.store.queries import Queries
from kbes.store.results import Hit

if TYPE_CHECKING:  # numpy: the semantic extra, imported at the first hybrid search
    from kbes.projections.vector_graph import VectorGraphs
    from kbes.projections.vector_index import VectorIndex

EMBED_PER_SEARCH = 4
"""Waiting articles one hybrid search embeds before it answers (about 0.1 s each)."""
EMBED_BATCH = 64
"""Texts embedded and stored per transaction by `embed_pending`."""


_noise_vectors: dict[str, Any] = {}
_noise_lock = threading.Lock()


class HybridSearch:
    """`search` by words and meaning: the keyword search's hits fused with the nearest vectors."""

    _vector_lock = threading.Lock()
    """One hybrid search or embedding at a time in a process (the index is shared state)."""

    def __init__(
        self,
        words: Queries,
        log: EventLog,
        views: Views,
        known: KnownKnowledgeBases,
        *,
        embedder: Embedder | None,
        hnsw_threshold: int,
        floor: float | None = hybrid.FLOOR,
    ) -> None:
        """`words` answers the keyword half and brings the views to the head of the log;
        `embedder`, by default the semantic extra's model, is what the vectors are made with."""
        self.words = words
        self.log = log
        self.views = views
        self.known = known
        self.embedder = embedder
        self.hnsw_threshold = hnsw_threshold
        self.floor = floor
        """None: no floor at all (the bench measures its effect so)."""
        self.background = False
        """Whether a background thread embeds this store's backlog (kbes.store.embedding):
        then a search embeds waiting articles only when at most EMBED_PER_SEARCH wait."""
        self._vector_state: tuple[Embedder, VectorIndex] | None = None
        self._graphs: VectorGraphs | None = None

    def search(self, knowledge_base_id: UUID | str, query: str, limit: int) -> list[Hit]:
        """Current published articles matching `query` by words or by meaning, best first.

        By words alone while any published article of the knowledge base waits for its vector
        (coverage): a fused ranking missing some articles' vectors ranked below keywords
        (docs/search.md). A hit only the vectors found must clear the query's floor
        (`hybrid.floor_for`: at least `hybrid.FLOOR` similar to the query, and more than the
        query is to random letters)."""
        kb = str(self.known.require(knowledge_base_id))
        words = self.words.search(kb, query, max(limit, hybrid.DEPTH))
        embedder, index = self._vectors()
        with self._vector_lock:
            self._sync_vectors()
            self._refresh(kb, index)
            waiting = index.waiting(kb, EMBED_PER_SEARCH + 1)
            if waiting and (len(waiting) <= EMBED_PER_SEARCH or not self.background):
                self._embed_articles(embedder, waiting[:EMBED_PER_SEARCH])
                self._refresh(kb, index)
            if index.bases[kb].waiting():
                return words[:limit]
            asked = embedder.embed([query])[0]
            meaning = self._vector_graphs(embedder).search(
                kb,
                index.bases[kb],
                index.hashes,
                (index.changed, index.embedded),
                asked,
                hybrid.DEPTH,
            )
            floor = None
            if self.floor is not None:
                floor = hybrid.floor_for(float(self._noise(embedder) @ asked), self.floor)
        by_words = {hit.article_id: hit for hit in words}
        fused = hybrid.fuse([list(by_words), [article_id for article_id, _ in meaning]])
        if floor is not None:
            fused = hybrid.above_floor(fused, by_words, dict(meaning), floor)
        return self._hits(kb, fused[:limit], by_words)

    def coverage(self, knowledge_base_id: UUID | str) -> tuple[int, int]:
        """(published articles with a vector, published articles) of the knowledge base, as
        this process's index holds them after a refresh."""
        kb = str(self.known.require(knowledge_base_id))
        _, index = self._vectors()
        self.words.catch_up()
        with self._vector_lock:
            self._sync_vectors()
            self._refresh(kb, index)
            base = index.bases[kb]
            return len(base), len(base) + base.waiting()

    def embed_some(self, embedder: Embedder, after: str, limit: int) -> tuple[str, int]:
        """Embed up to `limit` published texts the model lacks, walking article ids after
        `after`; return the last id read ("" when none was left after it) and how many texts
        were embedded. The slow part runs outside the vector lock, so searches go on
        meanwhile: the background embedding's step (kbes.store.embedding)."""
        _, index = self._vectors()
        self.words.catch_up()
        with self._vector_lock:
            self._sync_vectors()
        with self.views.read() as c:
            rows = vectors.pending(c, index.model, after, limit)
        if not rows:
            return "", 0
        texts = {vectors.content_hash(t, x): (t, x) for _, t, x in rows}
        self._embed_texts(embedder, list(texts.values()))
        return rows[-1][0], len(texts)

    def background_model(self) -> Embedder:
        """The embedder a background thread uses: the store's own if one was given, else a
        second copy of the extra's model, so a search's query never waits for a batch."""
        embedder, _ = self._vectors()
        if self.embedder is not None:
            return embedder
        from kbes.projections.embedder import MiniLM

        return MiniLM()

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every published article whose text the model has not embedded yet; report
        each batch to `progress`; return how many texts were embedded."""
        embedder, index = self._vectors()
        done, after = 0, ""
        with self._vector_lock:
            self.words.catch_up()
            self._sync_vectors()
            while True:
                with self.views.read() as c:
                    rows = vectors.pending(c, embedder.name, after, EMBED_BATCH)
                if not rows:
                    self._prepare_graphs(embedder, index)
                    return done
                after = rows[-1][0]
                texts = {vectors.content_hash(t, x): (t, x) for _, t, x in rows}
                self._embed_texts(embedder, list(texts.values()))
                done += len(texts)
                if progress is not None:
                    progress(len(rows))

    def pending_embeddings(self) -> int:
        """How many published texts the model has not embedded yet (after a catch-up)."""
        embedder, _ = self._vectors()
        self.words.catch_up()
        with self._vector_lock:
            self._sync_vectors()
            with self.views.read() as c:
                return vectors.count_pending(c, embedder.name)

    # Parts ------------------------------------------------------------------------------------

    def _vectors(self) -> tuple[Embedder, VectorIndex]:
        if self._vector_state is None:
            from kbes.projections.vector_index import VectorIndex

            model = self.embedder
            if model is None:
                require()
                model = shared_model()
            self._vector_state = (model, VectorIndex(model.name))
        return self._vector_state

    def _noise(self, embedder: Embedder) -> Any:
        """The unit mean of the embeddings of `hybrid.noise()`: what random letters are near
        (embedded once per process and model: 64 short texts)."""
        with _noise_lock:
            vector = _noise_vectors.get(embedder.name)
            if vector is None:
                vector = hybrid.unit_mean(embedder.embed(hybrid.noise()))
                _noise_vectors[embedder.name] = vector
            return vector

    def _vector_graphs(self, embedder: Embedder) -> VectorGraphs:
        if self._graphs is None:
            from kbes.projections.vector_graph import VectorGraphs

            root = self.views.database.beside(".vectors")
            self._graphs = VectorGraphs(embedder.name, root, self.hnsw_threshold)
        return self._graphs

    def _prepare_graphs(self, embedder: Embedder, index: VectorIndex) -> None:
        """Every knowledge base at or above the HNSW threshold gets its graph filled or
        brought forward and saved now (an import, the bench), not at a search."""
        graphs = self._vector_graphs(embedder)
        with self.views.read() as c:
            c.execute(
                "SELECT knowledge_base_id FROM vector_articles WHERE content_hash IS NOT NULL "
                "GROUP BY knowledge_base_id HAVING COUNT(*) >= ?",
                (graphs.threshold,),
            )
            large = [row[0] for row in c.fetchall()]
        for kb in large:
            self._refresh(kb, index)
            base = index.bases[kb]
            if len(base) >= graphs.threshold:
                graphs.ready(kb, base, index.hashes, (index.changed, index.embedded), wait=True)

    def _sync_vectors(self) -> None:
        """The vector projection brought to the article view (one transaction)."""
        database = self.views.database
        with database.read() as c:
            ready = not _missing(c)
            if ready and vectors.tracked(c, database.application_name) == database.position(c):
                return
        with database.write() as c:
            if not ready:
                vectors.create(c)
            vectors.sync(c, self.log.feed, database.application_name, database.position(c))

    def _refresh(self, kb: str, index: VectorIndex) -> None:
        with self.views.read() as c:
            index.refresh(c)
            index.load(c, kb)

    def _embed_articles(self, embedder: Embedder, article_ids: list[str]) -> None:
        texts = []
        for article_id in article_ids:
            row = self.views.article(article_id)
            if row is not None and row["status"] == "published":
                texts.append((row["title"], row["content"]))
        self._embed_texts(embedder, texts)

    def _embed_texts(self, embedder: Embedder, texts: list[tuple[str, str]]) -> None:
        """Embed outside any transaction (slow), then store in one short one."""
        if not texts:
            return
        matrix = embedder.embed([document_text(title, content) for title, content in texts])
        pairs = [
            (vectors.content_hash(title, content), matrix[i].tobytes())
            for i, (title, content) in enumerate(texts)
        ]
        with self.views.database.write() as c:
            vectors.store_embeddings(c, embedder.name, pairs)

    def _hits(self, kb: str, article_ids: list[str], by_words: dict[str, Hit]) -> list[Hit]:
        """The hits in `article_ids` order: the keyword hit where there is one, else the
        article as the view holds it now, if still a published article of `kb`."""
        hits = []
        for article_id in article_ids:
            hit = by_words.get(article_id)
            if hit is None:
                row: Any = self.views.article(article_id)
                if row is None or row["status"] != "published" or row["knowledge_base_id"] != kb:
                    continue
                hit = Hit(
                    row["article_id"], row["title"], hybrid.lead(row["content"]), row["updated_at"]
                )
            hits.append(hit)
        return hits


def _missing(c: Any) -> bool:
    c.execute("SELECT 1 FROM sqlite_master WHERE name = 'embeddings'")
    return c.fetchone() is None


__all__ = ["EMBED_PER_SEARCH", "HybridSearch"]
