"""Row 10: search isolation (issue 12). A search in one knowledge base should cost what it
costs when that knowledge base is alone in its database, however many others share the file.

The same knowledge base (the same articles, the same queries) is built twice: alone in one
database, and in a second database among many others of the same size, whose articles are
saved in rounds with its own so every knowledge base's rows are mixed in the log and in the
index. Both are searched through the tool layer, one query of each in turn, so a change in the
machine's load lands on both alike."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from kbes import KnowledgeBaseStore, open_store
from kbes.sims.bench.calls import kbes_searcher
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus, bulk_store
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import latencies_in_turns, percentile

RATIO_TARGET = 1.3
ROUND = 50
"""Articles each knowledge base gets per round of the interleaved load."""


def measure_isolation(report: Report, workdir: Path, progress: Progress) -> None:
    """Rows 10a-d: search p50 of one knowledge base alone and among `isolation_others`
    others, their ratio, and the p99 among the others."""
    cfg = report.config
    size, others = cfg.isolation_articles, cfg.isolation_others
    corpus = Corpus(seed=10)
    drafts = corpus.drafts(size)
    rng = random.Random(10)
    queries = [corpus.query(drafts[rng.randrange(size)][0]) for _ in range(cfg.samples)]

    progress(f"row 10: one knowledge base of {size:,} articles alone (building)")
    alone_path = workdir / "isolation-alone.sqlite"
    [alone_kb] = _load(alone_path, [drafts])
    progress(f"row 10: the same among {others} others of {size:,} (building)")
    shared_path = workdir / "isolation-shared.sqlite"
    rest = [corpus.drafts(size) for _ in range(others)]
    # In the middle of the others: created (and numbered in the index) between them.
    middle = others // 2
    shared_kb = _load(shared_path, [*rest[:middle], drafts, *rest[middle:]])[middle]

    alone, shared = open_store(alone_path), open_store(shared_path)
    try:
        progress("row 10: searching, alone and shared in turns")
        p50s: tuple[list[float], list[float]] = ([], [])
        p99s: tuple[list[float], list[float]] = ([], [])
        for _ in range(cfg.repeats):
            by_alone, by_shared = latencies_in_turns(
                [
                    (kbes_searcher(alone, alone_kb), queries),
                    (kbes_searcher(shared, shared_kb), queries),
                ]
            )
            p50s[0].append(percentile(by_alone, 50))
            p50s[1].append(percentile(by_shared, 50))
            p99s[0].append(percentile(by_alone, 99))
            p99s[1].append(percentile(by_shared, 99))
    finally:
        alone.close()
        shared.close()

    searched = f"search_knowledge_base, {size:,} published articles"
    among = f"among {others} others of {size:,}"
    report.add(Row("10a", f"{searched}, alone in its database, p50", "ms", Stat.of(p50s[0])))
    report.add(Row("10b", f"{searched}, {among}, p50", "ms", Stat.of(p50s[1])))
    ratios = Stat.of([b / a for a, b in zip(*p50s, strict=True)])
    report.add(
        Row(
            "10c",
            f"search p50 {among} / alone (10b / 10a, the median of each run's ratio)",
            "x",
            ratios,
            target=f"<= {RATIO_TARGET:g}x",
            met=ratios.median <= RATIO_TARGET,
        )
    )
    report.add(
        Row(
            "10d",
            f"{searched}, {among}, p99",
            "ms",
            Stat.of(p99s[1]),
            target="—",
            note=f"alone: {Stat.of(p99s[0]).median:.3g} ms",
        )
    )


def _load(path: Path, knowledge_bases: Sequence[list[tuple[str, str]]]) -> list[str]:
    """A database holding one knowledge base per list of drafts, all published, saved in rounds
    of `ROUND` articles per knowledge base in a shuffled order, and projected into the views.
    Returns the knowledge bases' ids, in the order of `knowledge_bases`."""
    store: KnowledgeBaseStore = bulk_store(path)
    try:
        kbs = [str(store.create_knowledge_base(f"kb {i}")) for i in range(len(knowledge_bases))]
        order = random.Random(len(kbs))
        longest = max(len(drafts) for drafts in knowledge_bases)
        for start in range(0, longest, ROUND):
            turn = list(range(len(kbs)))
            order.shuffle(turn)
            for i in turn:
                chunk = knowledge_bases[i][start : start + ROUND]
                if chunk:
                    store.add_articles(kbs[i], chunk, publish=True)
        store.catch_up()
        return kbs
    finally:
        store.close()
