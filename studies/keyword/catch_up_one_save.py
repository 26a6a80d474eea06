"""Catching one save up, end to end through the store: N published articles in one knowledge
base (built once in DIR), then R times: one store saves an article with a fresh word, and the
timed search of a second store (as another process would) finds it by that word.
`python studies/keyword/catch_up_one_save.py N DIR [R]` with kbes installed."""

import statistics
import sys
import time
import uuid
from pathlib import Path

from kbes import open_store
from kbes.sims.bench.dataset import Corpus, bulk_store

n, folder = int(sys.argv[1]), Path(sys.argv[2])
repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 40
folder.mkdir(parents=True, exist_ok=True)
path = folder / f"catch-up-{n}.sqlite"
corpus = Corpus()
if not path.exists():
    loader = bulk_store(path)
    kb = str(loader.create_knowledge_base("catch-up"))
    for at in range(0, n, 2000):
        loader.add_articles(kb, corpus.drafts(min(2000, n - at)), publish=True)
    loader.catch_up()
    loader.close()
writer, reader = open_store(path), open_store(path)
kb = reader.knowledge_bases()[0].knowledge_base_id
started = time.perf_counter()
reader.search(kb, "warm", 10)
print(f"first search (builds the index if need be): {time.perf_counter() - started:.1f} s")
ids = [a.article_id for a in reader.articles(kb)[:repeat]]
times = []
run = uuid.uuid4().hex[:8]  # a fresh word each run: a save that changes nothing writes nothing
for i, article_id in enumerate(ids):
    word = f"zq{run}{i}fresh"
    _, content = corpus.drafts(1)[0]
    writer.save_article(kb, article_id, content=f"{content} {word}")
    t0 = time.perf_counter()
    hits = reader.search(kb, word, 10)
    times.append((time.perf_counter() - t0) * 1000)
    assert [h.article_id for h in hits] == [str(article_id)], hits
times.sort()
print(
    f"{n:,} articles: catch-up of one save + search, p50 {statistics.median(times):.1f} ms, "
    f"p90 {times[int(len(times) * 0.9)]:.1f} ms, min {times[0]:.1f}, max {times[-1]:.1f}"
)
