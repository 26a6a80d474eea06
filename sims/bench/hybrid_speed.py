"""Row 12: hybrid search latency in-process, through the tool layer, at the read sizes, for
keyword-shaped and question-shaped queries, beside keyword search on the same store.

Embedding 100,000 real articles takes hours on this machine (row 11e), so the articles' and
the queries' vectors here are synthetic: a clustered unit vector drawn from a hash of the
text (`SyntheticEmbedder`), 384 wide like the model's. Everything else is the product's path: the
keyword top 50, the vector projection's sync and refresh, the exact search over every vector
of the knowledge base (an HNSW graph above `KBES_HNSW_THRESHOLD`, filled by
`embed_pending`), the fusion and the hits. Row 12f is that graph's recall@10 against exact
search on the same vectors, through the same doors. Row 12e adds what the synthetic vectors
leave out: the real model embedding one query."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbes import call_tool, open_store
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store, publish_generated
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import latencies_ms, percentile

HYBRID_P99_TARGET = 30.0
DIMENSIONS = 384


CLUSTERS = 300
NOISE = 0.9
"""The norm of each text's noise around its cluster centre (the centres are unit vectors)."""


class SyntheticEmbedder:
    """A deterministic unit vector per text, at about a microsecond a text: one of `CLUSTERS`
    seeded centres, picked by a hash of the text, plus noise seeded by the same hash. Real
    embeddings cluster by topic; uniformly random vectors are the case where an HNSW graph's
    recall is worst and unlike any model's, so row 12f's recall would be too pessimistic."""

    name = "synthetic-clustered-384"

    def __init__(self) -> None:
        import numpy as np

        centres = np.random.default_rng(12).standard_normal((CLUSTERS, DIMENSIONS))
        self.centres = (centres / np.linalg.norm(centres, axis=1, keepdims=True)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rng = np.random.default_rng(seed)
            noise = rng.standard_normal(DIMENSIONS).astype(np.float32)
            v = self.centres[seed % CLUSTERS] + noise * (NOISE / np.sqrt(DIMENSIONS))
            out[i] = v / np.linalg.norm(v)
        return out


def question(query: str) -> str:
    return f"how do I find what the docs say about {query}?"


def measure_hybrid_speed(report: Report, workdir: Path, progress: Progress) -> None:
    cfg = report.config
    try:
        import numpy  # noqa: F401  (the semantic extra)
    except ImportError:
        report.notes.append("row 12 left out: the semantic extra is not installed")
        return
    corpus = Corpus(seed=12)
    rng = random.Random(12)
    for n, size in enumerate(cfg.hybrid_sizes):
        path = workdir / f"hybrid-{size}.sqlite"
        progress(f"row 12: {size:,} published articles (building)")
        loader = bulk_store(path)
        kb = str(loader.create_knowledge_base("hybrid"))
        titles = publish_generated(loader, kb, size, corpus)
        loader.close()
        store = open_store(path, search="hybrid", embedder=SyntheticEmbedder())
        words = open_store(path)
        try:
            progress(f"row 12: {size:,} synthetic vectors (embedding)")
            store.embed_pending()
            asked = [corpus.query(rng.choice(titles)) for _ in range(cfg.hybrid_samples)]
            shapes = {"keyword-shaped": asked}
            shapes["question-shaped"] = [question(q) for q in shapes["keyword-shaped"]]
            for m, (shape, queries) in enumerate(shapes.items()):
                progress(f"row 12: {size:,} articles, {shape} queries")
                p50s, p99s, k99s = [], [], []
                for _ in range(cfg.hybrid_repeats):
                    hybrid_ms = latencies_ms(_searcher(store, kb), queries)
                    keyword_ms = latencies_ms(_searcher(words, kb), queries)
                    p50s.append(percentile(hybrid_ms, 50))
                    p99s.append(percentile(hybrid_ms, 99))
                    k99s.append(percentile(keyword_ms, 99))
                key = f"12{'abcd'[2 * m]}" if n == len(cfg.hybrid_sizes) - 1 else None
                label = f"hybrid search_knowledge_base, {size:,} articles, {shape}"
                report.add(
                    Row(
                        key or f"12.{size}.{m}",
                        f"{label}, p50 / p99 (synthetic vectors; keyword p99 as baseline)",
                        "ms",
                        Stat.of(p99s),
                        baseline=Stat.of(k99s),
                        target=f"p99 <= {HYBRID_P99_TARGET:g} ms" if key else "",
                        met=Stat.of(p99s).median <= HYBRID_P99_TARGET if key else None,
                        note=f"p50 {Stat.of(p50s).median:.1f} ms",
                    )
                )
            if n == len(cfg.hybrid_sizes) - 1:
                _graph_recall(report, path, kb, size, words, len(asked))
        finally:
            store.close()
            words.close()
    _query_embedding(report, workdir, progress)


def _graph_recall(
    report: Report, path: Path, kb: str, vectors: int, words: Any, samples: int
) -> None:
    """Row 12f: of exact search's top 10, the share the HNSW graph's top 10 holds, at the
    graph's search breadth (projections/vector_graph.py), measured through the tools: the same
    file searched by two hybrid stores, one told to ask its HNSW graph (KBES_HNSW_THRESHOLD=1;
    `embed_pending` loads the graph saved beside the views, or fills it) and one told to search
    exactly (a threshold above the knowledge base), with queries no article shares a word with
    (the keyword store finds none), so each answer is the vector half's top 10 alone."""
    blind = [f"zq{n}x vw{n}k" for n in range(samples)]
    blind = [q for q in blind if not _hits(words, kb, q)]
    graph = _hybrid_store(path, hnsw_threshold=1)
    exact = _hybrid_store(path, hnsw_threshold=vectors + 1)
    try:
        graph.embed_pending()
        found = []
        for query in blind:
            truth = _hits(exact, kb, query)
            found.append(len(truth & _hits(graph, kb, query)) / max(len(truth), 1))
    finally:
        graph.close()
        exact.close()
    if not found:
        report.notes.append("row 12f left out: every query found an article by its words")
        return
    report.add(
        Row(
            "12f",
            f"HNSW recall@10 against exact search, {vectors:,} clustered synthetic vectors",
            "",
            Stat.of([sum(found) / len(found)]),
            note=f"{len(found)} queries",
            higher_is_better=True,
        )
    )


def _hybrid_store(path: Path, *, hnsw_threshold: int) -> Any:
    """A hybrid store on `path` that asks its HNSW graph from `hnsw_threshold` vectors on: the
    setting is read from the environment as the store opens (docs/operations.md)."""
    before = os.environ.get("KBES_HNSW_THRESHOLD")
    os.environ["KBES_HNSW_THRESHOLD"] = str(hnsw_threshold)
    try:
        return open_store(path, search="hybrid", embedder=SyntheticEmbedder())
    finally:
        if before is None:
            del os.environ["KBES_HNSW_THRESHOLD"]
        else:
            os.environ["KBES_HNSW_THRESHOLD"] = before


def _hits(store: Any, kb: str, query: str) -> set[str]:
    """The ids of the top 10 hits of `search_knowledge_base`."""
    arguments = {"knowledge_base_id": kb, "query": query, "limit": 10}
    return {hit.article_id for hit in call_tool(store, "search_knowledge_base", arguments).hits}


def _query_embedding(report: Report, workdir: Path, progress: Progress) -> None:
    """The real model's cost of one query: hybrid search of a 3-article knowledge base minus
    keyword search of it, per query."""
    path = workdir / "hybrid-model.sqlite"
    store = open_store(path, search="hybrid")
    try:
        kb = str(store.create_knowledge_base("model"))
        for title in ("Reset a password", "Billing cycle", "Travel expenses"):
            store.add_article(kb, title, f"How the {title.lower()} works.", publish=True)
        progress("row 12: the model embedding one query")
        corpus = Corpus(seed=13)
        queries = [question(corpus.title()) for _ in range(report.config.hybrid_samples)]
        runs = []
        for _ in range(report.config.hybrid_repeats):
            ms = latencies_ms(_searcher(store, kb), queries)
            runs.append(percentile(ms, 99))
        report.add(
            Row(
                "12e",
                "hybrid search of 3 articles with the real model (the query's embedding), p99",
                "ms",
                Stat.of(runs),
            )
        )
    finally:
        store.close()


def _searcher(store: Any, kb: str) -> Any:
    def search(query: str) -> object:
        return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})

    return search


def measure_store(path: str, samples: int) -> None:
    """Print hybrid and keyword p50/p99 on a store row 12 built (`kbes bench --rows 12 --dir`),
    its vectors already embedded: for a figure without building 100,000 articles again."""
    store = open_store(path, search="hybrid", embedder=SyntheticEmbedder())
    words = open_store(path)
    try:
        store.catch_up()
        [info] = store.knowledge_bases()
        kb = info.knowledge_base_id
        titles = [a.title for a in store.articles(kb)]
        rng = random.Random(12)
        corpus = Corpus(seed=12)
        asked = [corpus.query(rng.choice(titles)) for _ in range(samples)]
        for shape, queries in (("keyword", asked), ("question", [question(q) for q in asked])):
            for mode, on in (("hybrid", store), ("keyword", words)):
                ms = latencies_ms(_searcher(on, kb), queries)
                print(
                    f"{info.published:,} articles, {shape}-shaped, {mode} search: "
                    f"p50 {percentile(ms, 50):.1f} ms, p99 {percentile(ms, 99):.1f} ms "
                    f"({len(ms)} queries)",
                    flush=True,
                )
    finally:
        store.close()
        words.close()


if __name__ == "__main__":
    import sys

    measure_store(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300)


__all__ = ["SyntheticEmbedder", "measure_hybrid_speed", "measure_store"]
