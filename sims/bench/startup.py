"""Row 7: `kbes serve` start-up over stdio."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from kbes import open_store
from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus
from kbes.sims.bench.results import Report, Row, Stat


def serve_to_tools_list(db: Path) -> float:
    """Seconds from starting `kbes serve` (stdio) to the answer of the first `tools/list`."""

    def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def answer(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]
        raise RuntimeError("kbes serve closed stdout before answering")

    start = time.perf_counter()
    proc = subprocess.Popen(
        [*kbes_command(), "serve", "--db", str(db), "--grant-all"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "kbes-bench", "version": "1"},
                },
            },
        )
        answer(proc, 1)
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answer(proc, 2)
        elapsed = time.perf_counter() - start
        tools = listed.get("result", {}).get("tools", [])
        if len(tools) < 4:
            raise RuntimeError(f"tools/list answered {listed!r}")
        return elapsed
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_serve(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 7: `kbes serve` start-up to the first `tools/list` answer over stdio."""
    cfg = report.config
    label = "kbes serve start-up to the first tools/list answer (stdio)"
    progress("row 7: kbes serve start-up")
    db = workdir / "serve.sqlite"
    store = open_store(db)
    kb = store.create_knowledge_base("serve")
    store.add_articles(kb, Corpus().drafts(400), publish=True)
    store.close()
    runs = [serve_to_tools_list(db) for _ in range(cfg.serve_repeats)]
    row = report.add(Row("7", label, "s", Stat.of(runs), target="<= 0.6 s"))
    row.met = row.kbes is not None and row.kbes.median <= 0.6
