"""Indexing N articles whole, as a rebuild does: today's FTS5 fill (kbes.projections.search.fill's
insert, from the views) against a tantivy build (one writer, 1 and 2 threads) of the same rows.
Run: python fill_compare.py 100000"""
import os, sqlite3, sys, time, shutil
from pathlib import Path
import tantivy
from scale_keyword import open_index, doc, DIR
from kbes.projections import search as S
size = int(sys.argv[1])
src = DIR / f"kbes-{size}.sqlite"
db = sqlite3.connect(src)
rows = db.execute("SELECT article_id, knowledge_base_id, title, content FROM view_articles WHERE status='published'").fetchall()
mem = sqlite3.connect(":memory:")
mem.execute("CREATE TABLE v(seq INTEGER PRIMARY KEY, title, content)")
mem.executemany("INSERT INTO v(title, content) VALUES (?, ?)", [(r[2], r[3]) for r in rows])
mem.execute(S.SCHEMA)
t = time.perf_counter()
mem.execute(f"INSERT INTO search_index(rowid, {', '.join(S.COLUMNS)}) SELECT seq, title, content, '', '' FROM v ORDER BY seq")
mem.commit()
print(f"FTS5 fill of {len(rows):,} articles (in memory): {time.perf_counter()-t:.1f} s", flush=True)
for threads, heap in ((1, 200_000_000), (2, 200_000_000)):
    path = Path(os.environ["STUDY_DIR"]) / "kw" / f"fill-{size}"
    if path.exists(): shutil.rmtree(path)
    path.mkdir(parents=True)
    index = open_index(path)
    w = index.writer(heap_size=heap, num_threads=threads)
    t = time.perf_counter()
    for aid, kb, title, content in rows:
        w.add_document(doc(aid, kb, title, content))
    t1 = time.perf_counter()
    w.commit(); w.wait_merging_threads()
    print(f"tantivy build, {threads} thread(s): {time.perf_counter()-t:.1f} s "
          f"(of which Python documents + add: {t1-t:.1f} s)", flush=True)
    del w
    shutil.rmtree(path)
