"""Stage 1's cost: today's search SQL over the folded 4-column index against the same query over
the 2-column index it replaced, same file, same rows, in turns. Run: python fts5_columns_ab.py N"""
import json, os, shutil, sqlite3, sys
from pathlib import Path
from kbes.projections import search as S
from kbes.sims.bench.timing import latencies_in_turns, percentile
size = int(sys.argv[1])
DIR = Path(os.environ["STUDY_DIR"]) / "scale"
meta = json.loads((DIR / f"meta-{size}.json").read_text())
path = Path(os.environ["STUDY_DIR"]) / "wip" / f"ab-{size}.sqlite"
shutil.copy(DIR / f"kbes-{size}.sqlite", path)
db = sqlite3.connect(path)
db.execute("CREATE VIRTUAL TABLE old_index USING fts5(title, content, tokenize='porter unicode61 remove_diacritics 2')")
db.execute("INSERT INTO old_index(rowid, title, content) SELECT rowid, title, content FROM search_index ORDER BY rowid")
db.execute("CREATE VIRTUAL TABLE new_index USING fts5(title, content, title_folded, content_folded, tokenize='porter unicode61 remove_diacritics 2')")
db.execute("INSERT INTO new_index(rowid, title, content, title_folded, content_folded) SELECT rowid, title, content, title_folded, content_folded FROM search_index ORDER BY rowid")
db.commit()
new_sql = S.SEARCH_SQL.replace("search_index", "new_index")
old_sql = S.SEARCH_SQL.replace("search_index", "old_index").replace(f"{S.TITLE_WEIGHT}, {S.CONTENT_WEIGHT}, {S.TITLE_WEIGHT}, {S.CONTENT_WEIGHT}", f"{S.TITLE_WEIGHT}, {S.CONTENT_WEIGHT}")
kb = meta["kb"]
def new(q): return db.execute(new_sql, (S.match_expression(q), kb, 10)).fetchall()
def old(q): return db.execute(old_sql, (S.match_expression(q), kb, 10)).fetchall()
for qset in ("bench", "nl"):
    qs = meta["queries"][qset][:300]
    assert all(new(q) == old(q) for q in qs[:50])
    a, b = latencies_in_turns([(new, qs), (old, qs)])
    print(f"{size:,} {qset}: 4 columns p50 {percentile(a,50):.2f} p99 {percentile(a,99):.1f} ms; 2 columns p50 {percentile(b,50):.2f} p99 {percentile(b,99):.1f} ms", flush=True)
db.close()
for p in path.parent.glob(path.name + "*"): p.unlink()
