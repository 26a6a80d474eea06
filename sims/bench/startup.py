"""Row 7: `kbes serve` over stdio, from spawning the process to the answer of the first
`tools/call`, timed with the official MCP client: what an agent waits for before it can use
a knowledge base. No target: the row is there to be watched, not judged."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from kbes import open_store
from kbes.sims.bench.commands import kbes_command
from kbes.sims.bench.config import Progress
from kbes.sims.bench.dataset import Corpus
from kbes.sims.bench.results import Report, Row, Stat

FIRST_CALL = "search_knowledge_base"
"""The first call an agent makes to cite an article: it has to find one first."""


def serve_to_first_call(db: Path, kb: str, query: str) -> float:
    """Seconds from spawning `kbes serve` (stdio) to the answer of its first `tools/call`."""
    command, *args = kbes_command()
    server = StdioServerParameters(
        command=command, args=[*args, "serve", "--db", str(db), "--grant-all"], env=dict(os.environ)
    )

    async def first_call() -> float:
        with open(os.devnull, "w") as quiet:
            start = time.perf_counter()
            async with Client(stdio_client(server, errlog=quiet)) as client:
                arguments = {"knowledge_base_id": kb, "query": query}
                result = await client.call_tool(FIRST_CALL, arguments)
                elapsed = time.perf_counter() - start
        if result.is_error or not (result.structured_content or {}).get("hits"):
            raise RuntimeError(f"{FIRST_CALL} answered {result.content!r}")
        return elapsed

    return anyio.run(first_call)


def measure_serve(report: Report, workdir: Path, progress: Progress) -> None:
    """Row 7, on a small knowledge base of published articles."""
    cfg = report.config
    label = "kbes serve start-up to the first tools/call answer (search, stdio)"
    progress("row 7: kbes serve start-up")
    db = workdir / "serve.sqlite"
    corpus = Corpus()
    drafts = corpus.drafts(400)
    store = open_store(db)
    kb = store.create_knowledge_base("serve")
    store.add_articles(kb, drafts, publish=True)
    store.close()
    query = corpus.query(drafts[0][0])
    runs = [serve_to_first_call(db, str(kb), query) for _ in range(cfg.serve_repeats)]
    report.add(Row("7", label, "s", Stat.of(runs), target="—"))
