"""`kbes bench`: measure every hot path against a plain-sqlite3 baseline and print the table."""

from __future__ import annotations

import time

import click


def _groups(text: str | None, known: tuple[str, ...]) -> tuple[str, ...]:
    if not text:
        return known
    groups = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [g for g in groups if g not in known]
    if unknown:
        raise click.BadParameter(
            f"unknown row(s) {', '.join(unknown)}; rows are {', '.join(known)}",
            param_hint="--rows",
        )
    return groups


@click.command("bench")
@click.option(
    "--quick",
    is_flag=True,
    help="Small datasets and few repetitions (under a minute): checks the bench runs. The "
    "targets are judged on the full run (100,000 articles, 1,000,000 events; some minutes).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Also write every figure (each run, median, min, max, ratio, target) as JSON to FILE.",
)
@click.option(
    "--rows",
    "rows",
    metavar="1,2,...",
    help="Run only these rows (1 edits, 2 read/search, keyword- and question-shaped, 3 poll, "
    "4 long history, 5 caught-up check, 6 rebuild, 7 serve start-up, 8 sim day, 9 push to a "
    "listener, 10 search isolation, 11 search quality, 12 hybrid search speed, 13 search "
    "over MCP, 14 many knowledge bases on one server, 15 a server's search after another "
    "process's save). Default: all.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Build the throwaway databases here and keep them (default: a temporary folder, "
    "removed afterwards). The full run needs about 2 GB.",
)
@click.option(
    "--judged",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Row 11 also measures the judged collections found here: DIR/scifact/ (the allenai "
    "SciFact release's CSV files) and DIR/mtrag/mtragun-human/ (IBM's MT-RAG benchmark); "
    "docs/performance.md says where to fetch them. They are read, never copied.",
)
def bench(
    quick: bool,
    json_path: str | None,
    rows: str | None,
    directory: str | None,
    judged: str | None,
) -> None:
    """Measure every hot path of kbes against a plain-sqlite3 baseline and print the medians.

    Runs on throwaway SQLite files (WAL). kbes is measured at its default durability,
    synchronous=FULL, the same as the baseline: an acknowledged edit survives a power cut.
    Never touches --db / KBES_DB.

    \b
    Examples:
      kbes bench --quick
      kbes bench --json bench.json
      kbes bench --rows 1,2
      kbes bench --rows 11 --judged ~/judged
    """
    # Here, not at import: `kbes` starts without the bench's imports.
    from kbes.sims.bench.config import Config
    from kbes.sims.bench.runner import GROUPS, run
    from kbes.sims.bench.table import render, write_json

    config = Config.quick_run() if quick else Config.full()
    started = time.perf_counter()

    def progress(message: str) -> None:
        click.echo(f"[{time.perf_counter() - started:6.1f}s] {message}", err=True)

    report = run(
        config,
        groups=_groups(rows, GROUPS),
        directory=directory,
        progress=progress,
        judged=judged,
    )
    click.echo(render(report))
    if json_path:
        write_json(report, json_path)
        click.echo(f"wrote {json_path}", err=True)
