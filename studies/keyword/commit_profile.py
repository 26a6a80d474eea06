"""What one tantivy commit pays for whatever it holds: R commits of one document each into an
empty in-memory index of kbes's schema, wall and CPU time (all threads) per commit, beside an
empty commit, and the minor page faults per commit. Run under `perf record -g` to see where the
CPU goes (docs/performance.md). `python studies/keyword/commit_profile.py [R] [--tuned]` with
kbes installed; `--tuned` first sets glibc's allocator as every `kbes` command does."""

import resource
import statistics
import sys
import time

import tantivy

from kbes.cli.allocator import tune_allocator
from kbes.projections import keyword_schema as K

numbers = [a for a in sys.argv[1:] if a.isdigit()]
repeat = int(numbers[0]) if numbers else 400
if "--tuned" in sys.argv:
    print("tuned:", ", ".join(tune_allocator()) or "nothing (not glibc, or set already)")
index = K.register(tantivy.Index(K.SCHEMA))
text = "Note 1 body alpha about topic 3 " * 20


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


for label, documents in (("one document", 1), ("empty", 0)):
    wall, spent, faulted = [], [], []
    for n in range(repeat):
        writer = index.writer(15_000_000, 1)
        for _ in range(documents):
            writer.add_document(
                tantivy.Document(article_id=f"a{n}", text=text, stored=b"x" * 300, seq=n)
            )
        f0, c0, t0 = faults(), cpu(), time.perf_counter()
        writer.commit()
        wall.append(time.perf_counter() - t0)
        spent.append(cpu() - c0)
        faulted.append(faults() - f0)
        writer.wait_merging_threads()
    print(
        f"{label}: commit p50 {statistics.median(wall) * 1000:.2f} ms wall, "
        f"{statistics.median(spent) * 1000:.2f} ms CPU, "
        f"{statistics.median(faulted):.0f} page faults ({repeat} commits)"
    )
