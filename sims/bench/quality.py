"""Row 11: ranking quality, keyword and hybrid, on a judged collection built offline from this
machine's man pages (kbes.sims.bench.manpages): nDCG@10 of `search_knowledge_base` through
the tool layer, each query asked as written and as a question, with the hybrid's gain over
keyword and its paired-bootstrap 95% interval; and the time the model takes to embed the
collection, per 1,000 articles. The figures are deterministic: one run each.

With `--judged DIR` (kbes.sims.bench.judged), the same on SciFact and MT-RAG, loaded as a bulk
import without vectors and then searched as `kbes serve --search hybrid` would: the
background embedding started (kbes.store.embedding), every query asked at once (the "served
at once" figure), then again once the thread has embedded them all (the hybrid figure), with
the time it took. Each hybrid figure's note also gives it without the similarity floor, and
one row counts what 30 queries of random letters get."""

from __future__ import annotations

import functools
import math
import os
import random
import statistics
import string
import threading
import time
from pathlib import Path
from typing import Any

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.sims.bench.config import Progress
from kbes.sims.bench.judged import Judged, load_all
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


def graded_ndcg_at_10(ranked: list[int], grades: dict[int, int]) -> float:
    """nDCG@10 with graded judgments (gain = grade), the ideal from the judged grades."""
    dcg = sum(grades.get(a, 0) / math.log2(r + 2) for r, a in enumerate(ranked[:10]))
    ideal = sorted(grades.values(), reverse=True)[:10]
    best = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / best if best else 0.0


def bootstrap_mean(a: list[float], seed: int = 1) -> tuple[float, float]:
    """The 95% bootstrap interval of the mean of `a`."""
    rng = random.Random(seed)
    n = len(a)
    means = sorted(sum(a[rng.randrange(n)] for _ in range(n)) / n for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def random_letters(n: int = 30, seed: int = 7) -> list[str]:
    """Queries of random letters: one to four words of five to nine letters (shorter ones
    are often real words, "zip", "bc")."""
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))
            for _ in range(rng.randint(1, 4))
        )
        for _ in range(n)
    ]


def paired_bootstrap(a: list[float], b: list[float], seed: int = 1) -> tuple[float, float, float]:
    """Mean of a - b over queries and its 95% interval from `BOOTSTRAP` resamples."""
    rng = random.Random(seed)
    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(BOOTSTRAP))
    return sum(d) / n, means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def measure_quality(
    report: Report, workdir: Path, progress: Progress, judged: Path | None = None
) -> None:
    nonsense: list[tuple[int, int, int, str]] = []
    _measure_man_pages(report, workdir, progress, nonsense)
    if judged is None:
        report.notes.append(
            "row 11: SciFact and MT-RAG left out: pass --judged DIR (docs/performance.md)"
        )
        return
    collections = load_all(judged)
    if not collections:
        report.notes.append(f"row 11: no judged collection found under {judged}")
    for n, collection in enumerate(collections):
        _measure_judged(report, workdir, progress, collection, "fhjl"[n], nonsense)
    if nonsense:
        by_meaning = sum(n[0] for n in nonsense)
        by_words = sum(n[1] for n in nonsense)
        report.add(
            Row(
                "11n",
                f"{len(random_letters())} queries of random letters on each collection: hits "
                "under hybrid (keyword's in the note)",
                "hits",
                Stat.of([by_meaning]),
                target="keyword's",
                met=by_meaning == by_words,
                note=f"keyword {by_words}, without the floor {sum(n[2] for n in nonsense)}; "
                + "; ".join(n[3] for n in nonsense),
            )
        )


def _measure_man_pages(
    report: Report, workdir: Path, progress: Progress, nonsense: list[tuple[int, int, int, str]]
) -> None:
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
            unfloored = _without_floor(hybrid, functools.partial(_scores, hybrid, kb, ids, asked))
            gain, low, high = paired_bootstrap(fused, by_words)
            report.add(
                Row(
                    f"11{suffix[1]}",
                    "nDCG@10, hybrid (keyword + all-MiniLM-L6-v2, RRF k=60, floor), "
                    f"{name}, {words}",
                    "nDCG",
                    Stat.of([sum(fused) / len(fused)]),
                    target=f">= keyword + {GAIN_TARGET:g}",
                    met=gain >= GAIN_TARGET,
                    note=f"gain {gain:+.3f}, paired bootstrap 95% [{low:+.3f}, {high:+.3f}]; "
                    f"without the floor {_mean(unfloored):.3f}",
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
            nonsense.append(_nonsense(keyword, hybrid, kb, "man pages"))
            hybrid.close()
    finally:
        keyword.close()


def _measure_judged(
    report: Report,
    workdir: Path,
    progress: Progress,
    collection: Judged,
    key: str,
    nonsense: list[tuple[int, int, int, str]],
) -> None:
    """Keyword, hybrid served at once on a bulk import (background embedding running), and
    hybrid once it is done, on one judged collection."""
    name = (
        f"{collection.name} ({len(collection.articles):,} articles, "
        f"{len(collection.queries)} queries)"
    )
    progress(f"row 11: loading {name}")
    path = workdir / f"quality-{collection.name.lower()}.sqlite"
    keyword = open_store(path, synchronous="OFF")
    try:
        kb = str(keyword.create_knowledge_base(collection.name))
        ids = [str(i) for i in keyword.add_articles(kb, collection.articles, publish=True)]
        index = {article: n for n, article in enumerate(ids)}

        def scores(store: KnowledgeBaseStore) -> tuple[list[float], list[float]]:
            out, seconds = [], []
            for query_id, query in collection.queries:
                started = time.perf_counter()
                result: Any = call_tool(
                    store,
                    "search_knowledge_base",
                    {"knowledge_base_id": kb, "query": query, "limit": 10},
                )
                seconds.append(time.perf_counter() - started)
                ranked = [index[hit.article_id] for hit in result.hits]
                out.append(graded_ndcg_at_10(ranked, collection.judgments[query_id]))
            return out, seconds

        progress(f"row 11: {collection.name}, keyword")
        by_words, keyword_seconds = scores(keyword)
        low, high = bootstrap_mean(by_words)
        report.add(
            Row(
                f"11{key}",
                f"nDCG@10, keyword, {name}",
                "nDCG",
                Stat.of([_mean(by_words)]),
                note=f"95% [{low:.3f}, {high:.3f}]" + _domains(collection, by_words),
                higher_is_better=True,
            )
        )
        try:
            hybrid = open_store(path, synchronous="OFF", search="hybrid")
        except ImportError as e:
            report.notes.append(f"row 11: hybrid left out, {e!r}: pip install 'kbes[semantic]'")
            return
        try:
            progress(f"row 11: {collection.name}, served at once, embedding in the background")
            finished = threading.Event()
            done: list[Any] = []

            def report_progress(state: Any) -> None:
                if state.done:
                    done.append(state)
                    finished.set()

            load = os.getloadavg()[0]
            hybrid.embed_in_background(report=report_progress)
            at_once, at_once_seconds = scores(hybrid)
            if not finished.wait(timeout=6 * 3600):
                raise RuntimeError(f"{collection.name}: background embedding did not finish")
            state = done[0]
            progress(
                f"row 11: {collection.name}, {state.embedded} embedded in {state.seconds:.0f} s"
            )
            fused, fused_seconds = scores(hybrid)
            unfloored = _without_floor(hybrid, lambda: scores(hybrid)[0])
            nonsense.append(_nonsense(keyword, hybrid, kb, collection.name))
        finally:
            hybrid.close()
        gain, low, high = paired_bootstrap(fused, by_words)
        first, first_low, first_high = paired_bootstrap(at_once, by_words)
        mean_low, mean_high = bootstrap_mean(fused)
        after = chr(ord(key) + 1)
        report.add(
            Row(
                f"11{after}",
                f"nDCG@10, hybrid (keyword + all-MiniLM-L6-v2, RRF k=60, floor), {name}",
                "nDCG",
                Stat.of([_mean(fused)]),
                target="not below keyword",
                met=high >= 0,
                note=f"95% [{mean_low:.3f}, {mean_high:.3f}]; gain {gain:+.3f}, paired "
                f"bootstrap 95% [{low:+.3f}, {high:+.3f}]; without the floor "
                f"{_mean(unfloored):.3f}" + _domains(collection, fused),
                higher_is_better=True,
            )
        )
        report.add(
            Row(
                f"11{after}-at-once",
                f"nDCG@10, hybrid served at once on the bulk import, {collection.name}",
                "nDCG",
                Stat.of([_mean(at_once)]),
                target="not below keyword",
                met=first_high >= 0,
                note=f"gain {first:+.3f} [{first_low:+.3f}, {first_high:+.3f}]; search p50 "
                f"{statistics.median(at_once_seconds) * 1000:.1f} ms while embedding, "
                f"{statistics.median(fused_seconds) * 1000:.1f} ms after, keyword "
                f"{statistics.median(keyword_seconds) * 1000:.1f} ms; background embedding "
                f"of {state.embedded:,} articles took {state.seconds:.0f} s "
                f"({state.cpu_seconds:.0f} s of CPU, "
                f"{state.cpu_seconds * 1000 / max(state.embedded, 1):.0f} s per 1,000; "
                f"load {load:.1f} at its start)",
                higher_is_better=True,
            )
        )
    finally:
        keyword.close()


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _without_floor(store: KnowledgeBaseStore, measure: Any) -> list[float]:
    """`measure()` with the similarity floor off: its effect, for the note."""
    floor = store.hybrid.floor
    store.hybrid.floor = None
    try:
        return measure()
    finally:
        store.hybrid.floor = floor


def _nonsense(
    keyword: KnowledgeBaseStore, hybrid: KnowledgeBaseStore, kb: str, name: str
) -> tuple[int, int, int, str]:
    """Hits of the random-letter queries under hybrid, keyword and hybrid without the
    floor, and a note."""
    queries = random_letters()

    def hits(store: KnowledgeBaseStore) -> int:
        return sum(len(store.search(kb, query, 10)) for query in queries)

    unfloored = int(_without_floor(hybrid, lambda: [float(hits(hybrid))])[0])
    by_meaning, by_words = hits(hybrid), hits(keyword)
    note = f"{name}: hybrid {by_meaning}, keyword {by_words}, without the floor {unfloored}"
    return by_meaning, by_words, unfloored, note


def _domains(collection: Judged, values: list[float]) -> str:
    """Per domain, where the collection has several."""
    if not collection.domains:
        return ""
    by: dict[str, list[float]] = {}
    for (query_id, _), value in zip(collection.queries, values, strict=True):
        by.setdefault(collection.domains.get(query_id, "?"), []).append(value)
    return "; " + ", ".join(f"{d} {_mean(v):.3f}" for d, v in sorted(by.items()))


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
