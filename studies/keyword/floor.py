"""The floor of a tantivy commit: a schema of one text field, in memory (docs/performance.md)."""
import time, statistics, tantivy
b = tantivy.SchemaBuilder(); b.add_text_field("t", stored=False); s = b.build()
idx = tantivy.Index(s)
for heap in (15_000_000, 100_000_000):
  w = idx.writer(heap, 1)
  ts=[]
  for j in range(60):
    w.add_document(tantivy.Document(t="hello world %d" % j))
    t0=time.perf_counter(); w.commit(); ts.append((time.perf_counter()-t0)*1000)
  print("kept", heap, statistics.median(ts))
  w.wait_merging_threads()
ts=[]
for j in range(30):
    t0=time.perf_counter(); w = idx.writer(15_000_000, 1); w.add_document(tantivy.Document(t="x y")); w.commit(); w.wait_merging_threads(); ts.append((time.perf_counter()-t0)*1000)
print("per-commit writer", statistics.median(ts))
