"""Row 9: push latency and the idle cost of a listener (issue 14).

A real `kbes serve --http` process serves one listener (the official MCP client, protocol
2026-07-28) on an article's current URI; this process saves that article through its own store,
so the server can only learn of the save from the shared log, as it would from `kbes article
save` in another terminal. Latency is from the save's return (committed) to the listener's
`notifications/resources/updated`. The idle cost is the server process's CPU time over a quiet
window, with the listener open and with none, and the statements per second its log tail sent
meanwhile (the server logs that figure when its last listener leaves). Public API only: the
store, the `kbes` command, the MCP client. `python -m kbes.sims.bench.push [POSTGRES_URL]` runs
it alone, optionally on a PostgreSQL log."""

from __future__ import annotations

import functools
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from kbes import open_store
from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.results import Report, Row, Stat
from kbes.sims.bench.timing import percentile

P99_TARGET_SECONDS = 1.0
STARTED = "Running on http://"
"""What hypercorn logs (at `--log-level info`) once the app has started and it serves."""


def measure_push(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 9 on a SQLite log in `workdir`: 9a/9b a save's latency to a listener (p50, p99),
    9c the server's CPU with one listener open and nothing happening, 9d the statements per
    second its tail sends the log meanwhile (none with no listener: the tail waits)."""
    cfg = report.config
    progress("row 9: push to a listener")
    figures = push_bench(
        saves=cfg.push_saves, idle_seconds=cfg.push_idle_seconds, scratch=workdir / "push"
    )
    saves = f"{figures['saves']} saves by another process, each -> listener"
    p50 = figures["latency_p50_seconds"]
    p99 = figures["latency_p99_seconds"]
    report.add(Row("9a", f"push p50: {saves}", "s", Stat.of([p50]), target="—"))
    report.add(
        Row(
            "9b",
            f"push p99: {saves}",
            "s",
            Stat.of([p99]),
            target=f"<= {P99_TARGET_SECONDS:g} s",
            met=p99 <= P99_TARGET_SECONDS,
        )
    )
    report.add(
        Row(
            "9c",
            "idle kbes serve CPU, one listener open",
            "CPU s/min",
            Stat.of([figures["idle_cpu_seconds_per_minute_listening"]]),
            target="—",
            note=f"no listener: {figures['idle_cpu_seconds_per_minute_no_listener']} CPU s/min",
        )
    )
    report.add(
        Row(
            "9d",
            "idle statements against the log, one listener open",
            "statements/s",
            Stat.of([figures["idle_statements_per_second_listening"]]),
            target="—",
            note="none with no listener",
        )
    )


def push_bench(
    *,
    saves: int = 50,
    idle_seconds: float = 15.0,
    postgres_url: str | None = None,
    scratch: Path | None = None,
) -> dict[str, Any]:
    """Run the measurement in `scratch` (default: a temporary folder) on SQLite, or on a fresh
    knowledge base in the PostgreSQL log at `postgres_url`; returns the figures (seconds)."""
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kbes-push-", dir=scratch) as folder:
        db = postgres_url or str(Path(folder) / "push.sqlite")
        store = open_store(db, views=Path(folder) / "views-bench.sqlite")
        try:
            kb = str(store.create_knowledge_base("Push bench"))
            article = str(store.add_article(kb, "Listened to", "version 0", publish=True))
            with _serve(db, kb, Path(folder)) as (url, pid, log):
                return anyio.run(_measure, store, url, pid, log, kb, article, saves, idle_seconds)
        finally:
            store.close()


async def _measure(
    store: Any, url: str, pid: int, log: Path, kb: str, article: str, saves: int, idle: float
) -> dict[str, Any]:
    from mcp import Client
    from mcp.shared.uri_template import UriTemplate

    idle_without = await _cpu_over(pid, idle)
    async with Client(url) as client:
        # The article's current URI as any client builds it: from the advertised template.
        template = next(
            t.uri_template
            for t in (await client.list_resource_templates()).resource_templates
            if t.name == "article"
        )
        uri = UriTemplate.parse(template).expand({"knowledge_base_id": kb, "article_id": article})
        async with client.listen(resource_subscriptions=[uri]):
            idle_with = await _cpu_over(pid, idle)
        statements = await _tail_rate(log)
        latencies: list[float] = []
        # Saves at random moments, so they fall anywhere between two looks of the tail (saves
        # at a fixed pace after each ring would lock onto its rhythm and measure one phase).
        jitter = random.Random(14)
        async with client.listen(resource_subscriptions=[uri]) as stream:
            events = stream.__aiter__()
            for i in range(1, saves + 1):
                await anyio.sleep(jitter.uniform(0.0, 0.4))
                await anyio.to_thread.run_sync(
                    functools.partial(store.save_article, kb, article, content=f"version {i}")
                )
                saved = time.monotonic()
                with anyio.fail_after(10):
                    await events.__anext__()
                latencies.append(time.monotonic() - saved)
    return {
        "saves": saves,
        "latency_p50_seconds": round(percentile(latencies, 50), 4),
        "latency_p99_seconds": round(percentile(latencies, 99), 4),
        "latency_max_seconds": round(max(latencies), 4),
        "idle_cpu_seconds_per_minute_listening": round(idle_with * 60 / idle, 3),
        "idle_cpu_seconds_per_minute_no_listener": round(idle_without * 60 / idle, 3),
        "idle_statements_per_second_listening": statements,
    }


async def _tail_rate(log: Path) -> float:
    """The statements per second the server's tail reported for the stretch just ended."""
    pattern = re.compile(r"push: no listener left after .*\(([0-9.]+)/s\)")
    with anyio.fail_after(5):
        while True:
            found = pattern.findall(log.read_text(errors="replace"))
            if found:
                return float(found[-1])
            await anyio.sleep(0.05)


async def _cpu_over(pid: int, seconds: float) -> float:
    before = _cpu_seconds(pid)
    await anyio.sleep(seconds)
    return _cpu_seconds(pid) - before


def _cpu_seconds(pid: int) -> float:
    """CPU time of a process, from /proc (Linux): the scheduler's nanosecond run time summed
    over its threads (the tail runs in a worker thread), else user + system clock ticks, too
    coarse for a quiet process over a short window."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks.iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


@contextmanager
def _serve(db: str, kb: str, scratch: Path) -> Any:
    """`kbes serve --http 127.0.0.1:0` on `db`, granted `kb`; yields (url, pid, log path)."""
    log_path = scratch / "serve.log"
    command = [*kbes_command(), "serve", "--db", str(db)]
    env = {**os.environ, "KBES_VIEWS": str(scratch / "views-server.sqlite")}  # PostgreSQL only
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "--grant", kb, "--http", "127.0.0.1:0", "--log-level", "info"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            # The URL is printed as the socket is bound, before hypercorn serves it: wait for
            # hypercorn's own word that the app started, so the idle window holds no start-up.
            text = log_path.read_text(errors="replace")
            found = re.search(r"http://127\.0\.0\.1:\d+/mcp", text)
            if found and STARTED in text:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kbes serve did not start:\n{log_path.read_text()}")
            time.sleep(0.05)
        yield found.group(0), process.pid, log_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def render(figures: dict[str, Any]) -> str:
    """The bench rows as text."""
    return "\n".join(
        [
            f"push: save in another process -> listener, p50 "
            f"{figures['latency_p50_seconds'] * 1000:.0f} ms, p99 "
            f"{figures['latency_p99_seconds'] * 1000:.0f} ms over {figures['saves']} saves",
            f"push: idle server CPU, one listener open: "
            f"{figures['idle_cpu_seconds_per_minute_listening']} s/min "
            f"(no listener: {figures['idle_cpu_seconds_per_minute_no_listener']} s/min)",
            f"push: idle statements against the log, one listener open: "
            f"{figures['idle_statements_per_second_listening']}/s (none without a listener: "
            "the tail waits for one)",
        ]
    )


if __name__ == "__main__":
    print(render(push_bench(postgres_url=sys.argv[1] if len(sys.argv) > 1 else None)))
