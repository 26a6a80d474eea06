"""Reproduce defect 1: ten imports of N small Markdown files into PostgreSQL, each into a new KB."""
import os, subprocess, sys, time, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from pg_server import PgServer

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2800
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
LIMIT = float(sys.argv[3]) if len(sys.argv) > 3 else 120
tmp = Path(tempfile.mkdtemp(prefix="kbes-repro-"))
folder = tmp / "docs"
folder.mkdir()
for i in range(N):
    (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\nRefunds take {i % 9 + 1} days. Line {i}.\n" + ("Some more words about refunds and returns. " * int(os.environ.get("REPEAT", "1"))))
server = PgServer().start()
try:
    url = server.create_database()
    env = {**os.environ, "KBES_VIEWS": str(tmp / "views.sqlite")}
    kbes = [sys.executable, "-m", "kbes.cli"] if False else ["kbes"]
    times = []
    for run in range(RUNS):
        kb = subprocess.run(kbes + ["kb", "create", f"KB {run}", "--db", url], env=env,
                            capture_output=True, text=True, check=True).stdout.split()[0]
        t0 = time.monotonic()
        p = subprocess.Popen(kbes + ["import", str(folder), "--kb", kb, "--publish", "--db", url],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        hold = float(os.environ.get("HOLD", "0"))
        if hold:
            import psycopg
            with psycopg.connect(url) as c, psycopg.connect(url, autocommit=True) as watch:
                c.execute("LOCK TABLE kbes_events IN EXCLUSIVE MODE")
                waited = 0
                while waited < 120 and p.poll() is None:
                    n = watch.execute("select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()").fetchone()[0]
                    if n:
                        break
                    time.sleep(0.1); waited += 0.1
                time.sleep(hold)
        try:
            rc = p.wait(LIMIT)
            dt = time.monotonic() - t0
            times.append(dt)
            print(f"run {run}: exit {rc} in {dt:.1f} s", p.stderr.read()[-300:] if rc else "", flush=True)
        except subprocess.TimeoutExpired:
            print(f"run {run}: HUNG after {LIMIT:.0f} s", flush=True)
            subprocess.run(["psql", server.admin_url, "-Atc",
                "select pid, state, wait_event_type, wait_event, left(query, 60) from pg_stat_activity where datname like 'kbes%'"],)
            subprocess.run(["psql", server.admin_url, "-Atc",
                "select l.pid, l.mode, l.granted, c.relname from pg_locks l join pg_class c on c.oid=l.relation where c.relname like 'kbes%'"],)
            import signal
            p.send_signal(signal.SIGINT)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill(); p.wait()
            print("\n".join(p.stderr.read().splitlines()[-25:]))
finally:
    server.stop()
