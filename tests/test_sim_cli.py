"""`kbes sim` as a user runs it: the tables, the `--json` document, the `--trace` that lets a
run be recounted without the store, `--delay`, `--db`, `--plot` and the benchmark mode."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kbes import parse_timestamp
from kbes.cli import main
from kbes.cli.sim import sim
from kbes.sims import report, source
from kbes.sims.trace import read_trace

SMALL = ["--seeds", "1-2", "--articles", "60", "--questions", "24", "--saves", "80", "--hours", "4"]


def run(*args: str) -> Result:
    result = CliRunner().invoke(sim, list(args), catch_exceptions=False)
    return result


def test_sim_is_a_kbes_command() -> None:
    assert main.commands["sim"] is sim
    assert set(sim.commands) == {"day", "staleness", "cost", "edits"}


def test_day_prints_every_table_and_writes_every_figure_as_json(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    result = run(
        "day", *SMALL, "--jobs", "1", "--delay", "20s", "--delay", "1h", "--json", str(out)
    )
    assert result.exit_code == 0, result.output
    for heading in (
        "## How fast do citations go stale?",
        "## Control run: the same saves spread uniformly over all articles",
        "## Re-read every cited article, or poll the log?",
        "## What happens when the agent edits with the version from a citation?",
    ):
        assert heading in result.output
    figures = json.loads(out.read_text())
    assert figures["format"] == "kbes-sim/1" and figures["command"] == "day"
    assert figures["parameters"]["seeds"] == [1, 2]
    assert figures["comparable_with_article"] is False
    popularity = figures["staleness"]["popularity"]
    assert [row["hour"] for row in popularity] == [1, 2, 3, 4]
    last = popularity[-1]
    assert last["citations"] == 2 * 2 * 24 and last["answers"] == 2 * 24
    assert last["stale"] == last["changed"] + last["gone"]
    assert last["stale_share"] == round(100 * last["stale"] / last["citations"], 1)
    assert figures["staleness"]["uniform"][-1]["title_caught"] is None
    cost = figures["cost"]
    assert cost["checks"] == 8
    assert cost["strategies"]["poll"]["calls"] == 8
    assert cost["strategies"]["poll"]["bytes"] < cost["strategies"]["read"]["bytes"] / 5
    edits = {row["delay"]: row for row in figures["edits"]}
    assert set(edits) == {"20 s", "1 h"}
    for row in edits.values():
        assert row["retry_saved"] == row["version_moved"]
        assert row["replays_wrote_nothing"] == row["replays"] == row["first_try_saved"]
        assert row["first_try_saved"] + row["version_moved"] + row["unpublished"] == row["edits"]
    assert figures["article"]["staleness"][-1] == {"hour": 8, **source.STALENESS[8]}
    assert figures["timings"]["wall_seconds"] > 0


def test_json_to_stdout_prints_only_json() -> None:
    result = run("cost", *SMALL, "--jobs", "1", "--json", "-")
    assert result.exit_code == 0
    figures = json.loads(result.output)
    assert set(figures["staleness"]) == {"popularity"} and "edits" not in figures


def _recount(records: list[dict[str, Any]], run_name: str) -> list[dict[str, int]]:
    """The staleness table rebuilt from the trace alone: the citations the agent's reads
    returned, the saves people made, and the instants of the checks."""
    rows: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for seed in sorted({r["seed"] for r in records}):
        mine = [r for r in records if r["seed"] == seed and r["run"] == run_name]
        saves = [r for r in mine if r["kind"] == "save"]
        questions = [parse_timestamp(r["at"]) for r in mine if r["kind"] == "question"]
        cited = [
            (
                parse_timestamp(r["at"]),
                r["result"]["citation"]["article_id"],
                parse_timestamp(r["result"]["citation"]["updated_at"]),
            )
            for r in mine
            if r["kind"] == "call"
            and r["purpose"] == "answer"
            and r["tool"] == "read_knowledge_article"
        ]
        for check in (r for r in mine if r["kind"] == "check"):
            at = parse_timestamp(check["at"])
            row = rows[check["hour"]]
            so_far = [c for c in cited if c[0] < at]
            row["citations"] += len(so_far)
            row["answers"] += sum(1 for q in questions if q < at)
            stale_answers = set()
            for read_at, article_id, version in so_far:
                since = [
                    s
                    for s in saves
                    if s["article_id"] == article_id
                    and version < parse_timestamp(s["updated_at"])
                    and parse_timestamp(s["at"]) < at
                ]
                if not since:
                    continue
                row["stale"] += 1
                stale_answers.add(read_at)
                if since[-1]["action"] == "unpublish":
                    row["gone"] += 1
                else:
                    row["changed"] += 1
                if any(s["action"] in ("retitle", "unpublish") for s in since):
                    row["title_caught"] += 1
            row["answers_with_stale"] += len(stale_answers)
    return [{"hour": h, **rows[h]} for h in sorted(rows)]


@pytest.mark.slow
def test_the_trace_alone_recounts_the_staleness_tables(tmp_path: Path) -> None:
    trace, out = tmp_path / "trace.jsonl", tmp_path / "figures.json"
    result = run(
        "staleness", *SMALL, "--uniform", "--plot", str(tmp_path / "p.png"), "--jobs", "2",
        "--trace", str(trace), "--json", str(out),
    ) if _has_matplotlib() else run(
        "staleness", *SMALL, "--jobs", "2", "--trace", str(trace), "--json", str(out)
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = read_trace(trace)
    figures = json.loads(out.read_text())
    keys = ("citations", "answers", "stale", "changed", "gone", "answers_with_stale")
    for run_name, rows in figures["staleness"].items():
        recounted = _recount(records, run_name)
        assert [{k: r[k] for k in ("hour", *keys)} for r in rows] == [
            {k: r.get(k, 0) for k in ("hour", *keys)} for r in recounted
        ]
        if run_name == "popularity":
            assert [r["title_caught"] for r in rows] == [
                r.get("title_caught", 0) for r in recounted
            ]
    # The trace also carries the cost: every byte the checks received.
    check_reads = sum(
        r["bytes"]
        for r in records
        if r["kind"] == "call" and r["purpose"] == "check:read" and r["run"] == "popularity"
    )
    assert check_reads == figures["cost"]["strategies"]["read"]["bytes"]
    kinds = {r["kind"] for r in records}
    assert {"run", "article", "question", "save", "call", "check"} <= kinds


def test_seed_31_completes_with_the_articles_parameters() -> None:
    """Seed 31 once drew "Sync calendar sync …", a title whose search words another task's
    title held too: the search ranked that article first, the title-only check missed, and the
    run stopped with "the simulation contradicted the method". The vocabulary now gives every
    search word to one verb, object or qualifier alone (`tests/test_sim_day.py`)."""
    result = run("staleness", "--seeds", "31", "--jobs", "1", "--json", "-")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["comparable_with_article"] is False  # seed 31, the article's day otherwise
    last = figures["staleness"]["popularity"][-1]
    assert last["hour"] == 8 and last["citations"] == 240 and last["title_caught"] is not None


def test_edits_with_one_delay_prints_that_delay_alone(tmp_path: Path) -> None:
    result = run("edits", *SMALL, "--jobs", "1", "--delay", "1h", "--edits-per-seed", "6")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| Delay after the read")
    assert [r.split(" | ")[0] for r in rows[2:]] == ["| 1 h"]
    assert "How fast do citations go stale" not in result.output


def test_bad_input_gets_a_clear_error_and_runs_nothing(tmp_path: Path) -> None:
    for args, words in (
        (["edits", "--delay", "5x"], "not a duration"),
        (["edits", "--delay", "9h"], "no answer is read early enough"),
        (["day", "--seeds", "five"], "give seeds as"),
        (["day", "--articles", "1"], "--articles"),
    ):
        result = CliRunner().invoke(sim, args)
        assert result.exit_code == 2, (args, result.output)
        assert words in result.output


def test_a_db_that_is_not_a_database_is_refused_before_any_run(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database, and long enough for SQLite to notice that it is not\n")
    result = CliRunner().invoke(sim, ["cost", "--db", str(not_a_db)])
    assert result.exit_code == 2  # as every kbes command refuses it
    assert f"cannot open database {str(not_a_db)!r} (--db" in result.output
    assert "file is not a database" in result.output
    assert not_a_db.read_text().startswith("not a database")


def test_plot_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    result = CliRunner().invoke(sim, ["day", "--plot", "x.png"])
    assert result.exit_code == 1
    assert "pip install 'kbes[plot]'" in result.output


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _has_matplotlib(), reason="the optional 'plot' extra is not installed")
def test_plot_draws_a_png(tmp_path: Path) -> None:
    """Slow: matplotlib's first figure on a machine runs `fc-list` to build its font cache."""
    png = tmp_path / "stale.png"
    result = run("staleness", *SMALL, "--jobs", "1", "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_db_runs_inside_a_named_file_and_keeps_it(tmp_path: Path) -> None:
    db = tmp_path / "sim.sqlite"
    args = [
        "--seeds",
        "1",
        "--articles",
        "40",
        "--questions",
        "10",
        "--saves",
        "30",
        "--hours",
        "2",
    ]
    result = run("day", *args, "--delay", "15min", "--db", str(db))
    assert result.exit_code == 0, result.output
    with sqlite3.connect(db) as connection:
        names = sorted(n for (n,) in connection.execute("SELECT name FROM view_knowledge_bases"))
    assert names == [
        "kbes sim: seed 1 edits 15 min",
        "kbes sim: seed 1 popularity",
        "kbes sim: seed 1 uniform",
    ]


@pytest.mark.slow
def test_benchmark_mode_prints_the_median_of_each_part(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = run("day", *SMALL, "--delay", "1h", "--benchmark", "2", "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "median of 2 repetition(s)" in result.output
    assert "| wall time, end to end |" in result.output
    parts = [row["part"] for row in json.loads(out.read_text())["benchmark"]]
    assert "phase: people's saves" in parts and parts[-1] == "wall time, end to end"


def test_with_the_articles_parameters_its_figures_stand_beside_ours(tmp_path: Path) -> None:
    """The report compares only like with like: article columns appear for its parameters."""
    out = tmp_path / "figures.json"
    assert run("cost", *SMALL, "--jobs", "1", "--json", str(out)).exit_code == 0
    figures = json.loads(out.read_text())
    assert "369 (30.8%)" not in report.render(figures, ["popularity", "cost"])
    figures["comparable_with_article"] = True
    text = report.render(figures, ["popularity", "cost"])
    assert "24 (15.8%)" in text  # the article's hour 1, beside ours
    assert "2,426" in text and "60.6 calls, 83.5 KiB" in text
    assert source.same_parameters((1, 2, 3, 4, 5), 400, 120, 300, 8, 0.9)
