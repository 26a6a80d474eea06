"""Server memory across handshake-era subscribe/DELETE cycles (issue 18, defect 3), printed:

    python tests/subscription_memory.py [--sessions 4] [--per-session 5000] [--runs 3]

Each run starts a real `kbes serve --http` on a fresh seeded database (with
`--max-subscriptions` raised to `--per-session` when that is past its default), reads its resident
memory (VmRSS), then, `--sessions` times: opens a 2025-06-18 session, subscribes it to
`--per-session` different article URIs of a granted knowledge base, DELETEs it and waits (up to
10 s) for the push tail to log that its last listener left; and reads the memory after each
session and once more after a second's pause, with the log lines the push
tail wrote when its last listener left. The defaults are the issue's reproduction (4 x 5,000 =
20,000 subscribe/DELETE cycles), which on the kbes before the fix went 82 -> 250 MB. It prints
each run and the median of the runs (Linux: /proc)."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from mcp_harness import http_server, seed
from raw_http import Session, article_uris, client

LEFT = "push: no listener left"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def one_run(sessions: int, per_session: int) -> tuple[float, list[float], float, int, float]:
    """RSS before, after each session, after a pause; tail stops logged; seconds taken."""
    with tempfile.TemporaryDirectory() as folder:
        data = seed(Path(folder) / "kbes.sqlite")
        serve: tuple[str, ...] = ("--grant-all", "--log-level", "info")
        if per_session > 1000:  # the 5,000 is past the default --max-subscriptions
            serve = (*serve, "--max-subscriptions", str(per_session))
        with http_server(data.db, *serve) as server:
            pid = server.process.pid
            with client() as http:  # one request first, so "before" is a served server
                warm = Session(http, server.url)
                warm.open()
                warm.close()
                time.sleep(0.5)
                before = rss_mb(pid)
                started = time.monotonic()
                after_each: list[float] = []
                for _ in range(sessions):
                    session = Session(http, server.url)
                    assert session.open().status_code == 200
                    for uri in article_uris(data.kb, per_session):
                        assert "error" not in session.subscribe(uri)
                    assert session.close() == 200
                    stopped = len(after_each) + 1
                    deadline = time.monotonic() + 10
                    while server.log().count(LEFT) < stopped and time.monotonic() < deadline:
                        time.sleep(0.05)  # the tail logs its stop within a tick or two
                    after_each.append(rss_mb(pid))
                seconds = time.monotonic() - started
            time.sleep(1.0)
            return before, after_each, rss_mb(pid), server.log().count(LEFT), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--per-session", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    total = args.sessions * args.per_session
    print(
        f"{args.runs} run(s) of {args.sessions} session(s) x {args.per_session} subscriptions "
        f"then DELETE, waiting for the tail to stop ({total:,} subscribe/DELETE cycles per "
        "run); server RSS in MB"
    )
    befores, afters = [], []
    for run in range(1, args.runs + 1):
        before, each, after, stops, seconds = one_run(args.sessions, args.per_session)
        befores.append(before)
        afters.append(after)
        steps = " -> ".join(f"{mb:.1f}" for mb in each)
        print(
            f"run {run}: before {before:.1f}; after each session {steps}; after {after:.1f}; "
            f"the tail stopped {stops} time(s); {seconds:.0f} s"
        )
    print(
        f"median: before {statistics.median(befores):.1f} MB, after "
        f"{statistics.median(afters):.1f} MB"
    )


if __name__ == "__main__":
    main()
