"""What one tantivy commit pays for whatever it holds: R commits of one document each into an
empty in-memory index of kbes's schema, wall and CPU time (all threads) per commit, beside an
empty commit. Run under `perf record -g` to see where the CPU goes (docs/performance.md).
`python studies/keyword/commit_profile.py [R]` with kbes installed."""

import resource
import statistics
import sys
import time

import tantivy

from kbes.projections import keyword_schema as K

repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 400
index = K.register(tantivy.Index(K.SCHEMA))
text = "Note 1 body alpha about topic 3 " * 20


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


for label, documents in (("one document", 1), ("empty", 0)):
    wall, spent = [], []
    for n in range(repeat):
        writer = index.writer(15_000_000, 1)
        for _ in range(documents):
            writer.add_document(
                tantivy.Document(article_id=f"a{n}", text=text, stored=b"x" * 300, seq=n)
            )
        c0, t0 = cpu(), time.perf_counter()
        writer.commit()
        wall.append(time.perf_counter() - t0)
        spent.append(cpu() - c0)
        writer.wait_merging_threads()
    print(
        f"{label}: commit p50 {statistics.median(wall) * 1000:.2f} ms wall, "
        f"{statistics.median(spent) * 1000:.2f} ms CPU ({repeat} commits)"
    )
