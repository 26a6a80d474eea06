"""The keyword engine as built on branch keyword-wip, through the tool (call_tool), on a copy of
the study's store of N articles: the first search's whole build, p50/p99 of both query shapes,
and the catch-up of one save (a save, then the next search that finds it).
Run: python wip_engine.py DB N"""
import json, os, sys, time, resource
from pathlib import Path
from kbes import open_store
from kbes.tools import call_tool
from kbes.sims.bench.timing import latencies_in_turns, percentile
db, size = sys.argv[1], int(sys.argv[2])
DIR = Path(os.environ.get("STUDY_DIR", "study")) / "scale"
meta = json.loads((DIR / f"meta-{size}.json").read_text())
kb = meta["kb"]
store = open_store(db)
def tool(q):
    return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": q})
t = time.perf_counter(); tool("warm up"); print(f"first search (builds the index whole): {time.perf_counter()-t:.1f} s", flush=True)
for qset in ("bench", "nl"):
    qs = meta["queries"][qset][:500]
    (lat,) = latencies_in_turns([(tool, qs)])
    print(f"{size:,} {qset}: p50 {percentile(lat,50):.2f} ms p90 {percentile(lat,90):.2f} p99 {percentile(lat,99):.2f} ms", flush=True)
aid = meta and store.search(kb, meta["queries"]["bench"][0], 1)[0].article_id
ups = []
for i in range(30):
    store.save_article(kb, aid, content=f"zqwip{i} fresh words")
    t = time.perf_counter()
    hits = tool(f"zqwip{i}").hits
    ups.append((time.perf_counter() - t) * 1000)
    assert [h.article_id for h in hits] == [aid], hits
print(f"save then the next search that finds it (views catch-up + index commit + search): p50 {percentile(ups,50):.1f} ms p90 {percentile(ups,90):.1f} ms", flush=True)
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MB")
size_mb = sum(p.stat().st_size for p in Path(db + ".keyword").rglob("*") if p.is_file()) / 1e6
print(f"index on disk {size_mb:.0f} MB")
