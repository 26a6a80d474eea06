"""The parts of one catch-up commit on a keyword index of N generated articles at DIR:
`python studies/keyword/commit_cost.py N DIR` with kbes installed (docs/performance.md)."""
import sys, time, os, statistics, shutil
import tantivy
from kbes.projections import keyword_schema as K
from kbes.sims.bench.dataset import Corpus
n = int(sys.argv[1]); path = sys.argv[2]
shutil.rmtree(path, ignore_errors=True); os.makedirs(path)
idx = tantivy.Index(K.SCHEMA, path=path); K.register(idx)
c = Corpus(); drafts = c.drafts(n)
t = time.perf_counter()
w = idx.writer(128_000_000, 1)
for i, (title, content) in enumerate(drafts):
    w.add_document(K.document(f"a{i}", title, content, "2026", i))
w.add_document(K.position_document(1, "s")); w.commit(); w.wait_merging_threads()
print("build", time.perf_counter() - t)
idx.config_reader(reload_policy="Manual")
res = {k: [] for k in ("open", "apply", "commit", "wait", "reload", "total")}
for j in range(40):
    t0 = time.perf_counter(); w = idx.writer(15_000_000, 1); t1 = time.perf_counter()
    w.delete_documents_by_term(K.ARTICLE_ID, f"a{j}")
    w.add_document(K.document(f"a{j}", drafts[j][0], drafts[j][1] + " fresh", "2027", j))
    w.delete_documents_by_term(K.ARTICLE_ID, K.POSITION_KEY); w.add_document(K.position_document(2 + j, "s"))
    t2 = time.perf_counter(); w.commit(); t3 = time.perf_counter(); w.wait_merging_threads(); t4 = time.perf_counter()
    idx.reload(); s = idx.searcher(); K.search(s, drafts[j][0], 10); t5 = time.perf_counter()
    for k, v in zip(res, (t1-t0, t2-t1, t3-t2, t4-t3, t5-t4, t5-t0)): res[k].append(v*1000)
print({k: round(statistics.median(v), 2) for k, v in res.items()}, "p90 total", sorted(res["total"])[35])
