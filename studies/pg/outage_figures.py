"""Figures for defect 2: time to `unavailable` with PostgreSQL stopped, time to answer again
after it restarts. Real kbes serve --http, real MCP client, real pg_ctl -m fast stop."""
import os, sys, time, statistics, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
import anyio
from mcp_harness import body, current_version, error, http_client, http_server, seed
from pg_server import PgServer

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
tmp = Path(tempfile.mkdtemp(prefix="kbes-outage-"))
os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
pg = PgServer().start()

async def main() -> None:
    url = pg.create_database()
    data = seed(url)
    search = {"knowledge_base_id": data.kb, "query": "password"}
    down_read, down_edit, back = [], [], []
    with http_server(url, "--grant-all", "--edits", "allow", log_path=tmp / "serve.log") as server:
        async with http_client(server.url) as client:
            for r in range(ROUNDS):
                version = current_version(url, data.kb, data.password) if False else None
                assert not (await client.call_tool("search_knowledge_base", search)).is_error
                pg.pause()
                t = time.monotonic(); res = await client.call_tool("search_knowledge_base", search)
                down_read.append(time.monotonic() - t); assert error(res)["code"] == "unavailable"
                edit = {"knowledge_base_id": data.kb, "article_id": data.password, "content": f"v{r}",
                        "expected_version": "2026-01-01T00:00:00.000000Z", "idempotency_key": f"k{r}"}
                t = time.monotonic(); res = await client.call_tool("edit_knowledge_article", edit)
                down_edit.append(time.monotonic() - t); assert error(res)["code"] == "unavailable"
                await anyio.sleep(float(os.environ.get("OUTAGE", "10")))
                pg.resume(); t = time.monotonic()
                while (await client.call_tool("search_knowledge_base", search)).is_error:
                    await anyio.sleep(0.1)
                back.append(time.monotonic() - t)
                print(f"round {r}: read unavailable in {down_read[-1]:.2f} s, edit in {down_edit[-1]:.2f} s, answering {back[-1]:.2f} s after restart", flush=True)
    med = statistics.median
    print(f"median of {ROUNDS}: read {med(down_read):.2f} s, edit {med(down_edit):.2f} s, recovery {med(back):.2f} s")

try:
    anyio.run(main)
finally:
    pg.stop()
