"""Row 11: ranking quality, keyword and hybrid, on a judged collection built offline from this
machine's man pages (kbes.sims.bench.manpages): nDCG@10 of `search_knowledge_base` through
the tool layer, each query asked as written and as a question, with the hybrid's gain over
keyword and its paired-bootstrap 95% interval; and the time the model takes to embed the
collection, per 1,000 articles. The figures are deterministic: one run each."""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.sims.bench.config import Progress
from kbes.sims.bench.manpages import Collection, build
from kbes.sims.bench.results import Report, Row, Stat

GAIN_TARGET = 0.04
BOOTSTRAP = 2000
FORMS = (("written", "as written"), ("question", "asked as a question"))


def ndcg_at_10(ranked: list[str], relevant: str) -> float:
    """nDCG@10 with one relevant article: 1 / log2(rank + 1) if it is in the top 10."""
    for rank, article in enumerate(ranked[:10], start=1):
        if article == relevant:
            return 1.0 / math.log2(rank + 1)
    return 0.0


def paired_bootstrap(a: list[float], b: list[float], seed: int = 1) -> tuple[float, float, float]:
    """Mean of a - b over queries and its 95% interval from `BOOTSTRAP` resamples."""
    rng = random.Random(seed)
    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(BOOTSTRAP))
    return sum(d) / n, means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def measure_quality(report: Report, workdir: Path, progress: Progress) -> None:
    cfg = report.config
    collection = build(cfg.quality_articles, cfg.quality_queries)
    name = f"man pages ({len(collection.pages)} articles, {len(collection.queries)} queries)"
    if len(collection.pages) < 50:
        report.notes.append(f"row 11 left out: this machine has too few man pages ({name})")
        return
    progress(f"row 11: building the {name} collection")
    path = workdir / "quality.sqlite"
    keyword = open_store(path, synchronous="OFF")
    try:
        kb, ids = _load(keyword, collection)
        try:
            hybrid = open_store(path, synchronous="OFF", search="hybrid")
        except ImportError as e:  # the semantic extra is not installed
            hybrid = None
            report.notes.append(f"row 11: hybrid left out, {e!r}: pip install 'kbes[semantic]'")
        embed_seconds = None
        if hybrid is not None:
            progress(f"row 11: embedding {len(ids)} articles")
            started = time.perf_counter()
            hybrid.embed_pending()
            embed_seconds = time.perf_counter() - started
        for suffix, (form, words) in zip(("ab", "cd"), FORMS, strict=True):
            asked = collection.asked(form)
            progress(f"row 11: {len(asked)} queries {words}")
            by_words = _scores(keyword, kb, ids, asked)
            report.add(
                Row(
                    f"11{suffix[0]}",
                    f"nDCG@10, keyword, {name}, {words}",
                    "nDCG",
                    Stat.of([sum(by_words) / len(by_words)]),
                    higher_is_better=True,
                )
            )
            if hybrid is None:
                continue
            fused = _scores(hybrid, kb, ids, asked)
            gain, low, high = paired_bootstrap(fused, by_words)
            report.add(
                Row(
                    f"11{suffix[1]}",
                    f"nDCG@10, hybrid (keyword + all-MiniLM-L6-v2, RRF k=60), {name}, {words}",
                    "nDCG",
                    Stat.of([sum(fused) / len(fused)]),
                    target=f">= keyword + {GAIN_TARGET:g}",
                    met=gain >= GAIN_TARGET,
                    note=f"gain {gain:+.3f}, paired bootstrap 95% [{low:+.3f}, {high:+.3f}]",
                    higher_is_better=True,
                )
            )
        if embed_seconds is not None:
            report.add(
                Row(
                    "11e",
                    f"embedding {len(ids)} articles (all-MiniLM-L6-v2 int8, one thread), "
                    "per 1,000 articles",
                    "s",
                    Stat.of([embed_seconds * 1000 / len(ids)]),
                )
            )
        if hybrid is not None:
            hybrid.close()
    finally:
        keyword.close()


def _load(store: KnowledgeBaseStore, collection: Collection) -> tuple[str, list[str]]:
    kb = store.create_knowledge_base("man pages")
    drafts = [(page.title, page.content) for page in collection.pages]
    ids = store.add_articles(kb, drafts, publish=True)
    return str(kb), [str(i) for i in ids]


def _scores(
    store: KnowledgeBaseStore, kb: str, ids: list[str], asked: list[tuple[int, str]]
) -> list[float]:
    scores = []
    for page, query in asked:
        result: Any = call_tool(
            store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query, "limit": 10}
        )
        scores.append(ndcg_at_10([hit.article_id for hit in result.hits], ids[page]))
    return scores


__all__ = ["measure_quality", "ndcg_at_10", "paired_bootstrap"]
