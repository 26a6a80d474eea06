"""`kbes sim`: the source article's experiments, run on kbes's own store through the agent tools.

Every run gets a fresh SQLite file in a temporary folder (removed afterwards unless --keep), so
the simulations never touch the database of --db/KBES_DB used by the other commands; pass this
group's own --db to run inside a file of your choice instead."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from click.core import ParameterSource

from kbes import open_store
from kbes.cli.options import read_settings, require_database
from kbes.sims import report, sim_benchmark
from kbes.sims.agent import SimulationError
from kbes.sims.day import DayParameters
from kbes.sims.edits import DEFAULT_DELAYS, DEFAULT_PER_SEED, parse_delay
from kbes.sims.experiment import (
    Settings,
    Workdir,
    default_jobs,
    join_traces,
    plan_tasks,
    run_tasks,
)
from kbes.sims.plot import PlotUnavailable, plot_staleness, require_matplotlib
from kbes.sims.seeds import parse_seeds

F = TypeVar("F", bound=Callable[..., Any])


def common_options(func: F) -> F:
    """The options every `kbes sim` command shares."""
    options = [
        click.option("--seeds", default="1-5", show_default=True, help="Seeds: 1-5, 3, or 1,4,9."),
        click.option(
            "--articles",
            default=400,
            show_default=True,
            type=click.IntRange(2, 6000),
            help="Articles in the knowledge base.",
        ),
        click.option(
            "--questions",
            default=120,
            show_default=True,
            type=click.IntRange(1),
            help="Questions per seed (each answer cites two articles).",
        ),
        click.option(
            "--saves",
            default=300,
            show_default=True,
            type=click.IntRange(0),
            help="Saves by people per seed.",
        ),
        click.option(
            "--hours",
            default=8,
            show_default=True,
            type=click.IntRange(1, 24),
            help="Length of the simulated day; a check runs at the end of each hour.",
        ),
        click.option(
            "--zipf",
            default=0.9,
            show_default=True,
            type=click.FloatRange(0),
            help="Zipf exponent of popularity (0 = uniform).",
        ),
        click.option(
            "--db",
            "db",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Run inside this SQLite file (created if missing, kept; each run is its own "
            "knowledge base) instead of a fresh temporary file per run. Not KBES_DB: a "
            "simulation never writes to your store unless you name it here.",
        ),
        click.option(
            "--keep",
            is_flag=True,
            help="Keep the temporary folder of databases (its path is printed on stderr).",
        ),
        click.option(
            "--json",
            "json_path",
            type=click.Path(dir_okay=False, allow_dash=True),
            default=None,
            metavar="FILE",
            help="Write every figure as JSON to FILE ('-': stdout, no tables).",
        ),
        click.option(
            "--trace",
            "trace_path",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="Write the generated day and every tool call with its result as JSON Lines.",
        ),
        click.option(
            "--jobs",
            type=click.IntRange(1),
            default=None,
            help="Worker processes (default: one per core; 1 with --db).",
        ),
        click.option(
            "--benchmark",
            type=click.IntRange(1),
            default=None,
            metavar="N",
            help="Run N times and print the median wall time of each part instead of tables.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _delays_option(default: Sequence[str]) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        func = click.option(
            "--edits-per-seed",
            "per_seed",
            default=DEFAULT_PER_SEED,
            show_default=True,
            type=click.IntRange(1),
            help="Edits per seed and delay (150 over five seeds).",
        )(func)
        return click.option(
            "--delay",
            "delays",
            multiple=True,
            default=tuple(default),
            show_default=True,
            help="Delay between the read and the edit, e.g. 20s, 15min, 1h, 1h30m (repeatable).",
        )(func)

    return decorate


def _plot_option(func: F) -> F:
    return click.option(
        "--plot",
        "plot_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE.png",
        help="Draw stale share per hour, popularity vs uniform (needs pip install 'kbes[plot]').",
    )(func)


@click.group("sim")
def sim() -> None:
    """Reproduce the source article's tables: a simulated support day on a fresh store.

    `kbes sim day` runs everything; `staleness`, `cost` and `edits` run one table each.
    """


@sim.command("day")
@common_options
@_delays_option(DEFAULT_DELAYS)
@_plot_option
def day_command(**options: Any) -> None:
    """Every table of the article: staleness, the control run, cost, and edits."""
    _execute("day", options, popularity=True, uniform=True, edits=True)


@sim.command("staleness")
@common_options
@click.option("--uniform", is_flag=True, help="The control run: the same saves spread uniformly.")
@_plot_option
def staleness_command(uniform: bool, **options: Any) -> None:
    """How fast citations go stale, checked every hour three ways."""
    plot = options.get("plot_path") is not None
    _execute(
        "staleness", options, popularity=not uniform or plot, uniform=uniform or plot, edits=False
    )


@sim.command("cost")
@common_options
def cost_command(**options: Any) -> None:
    """What the hourly checks cost: re-search titles, re-read articles, or poll the log."""
    _execute("cost", options, popularity=True, uniform=False, edits=False)


@sim.command("edits")
@common_options
@_delays_option(DEFAULT_DELAYS)
def edits_command(**options: Any) -> None:
    """Edits with the version from a citation, after a delay (--delay 1h: that delay alone)."""
    _execute("edits", options, popularity=False, uniform=False, edits=True)


def _execute(
    command: str, options: dict[str, Any], *, popularity: bool, uniform: bool, edits: bool
) -> None:
    try:
        seeds = parse_seeds(options["seeds"])
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--seeds") from None
    try:
        parameters = DayParameters(
            articles=options["articles"],
            questions=options["questions"],
            saves=options["saves"],
            hours=options["hours"],
            zipf=options["zipf"],
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    delays: list[int] = []
    if edits:
        source = click.get_current_context().get_parameter_source("delays")
        defaulted = source in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
        for text in options["delays"]:
            try:
                delay = parse_delay(text)
            except ValueError as e:
                raise click.BadParameter(str(e), param_hint="--delay") from None
            if delay >= parameters.length:
                message = (
                    f"{text}: no answer is read early enough for an edit {text} later to fall "
                    f"inside a {parameters.hours}-hour day"
                )
                if defaulted:
                    click.echo(f"skipping the delay {message}", err=True)
                    continue
                raise click.BadParameter(
                    f"{message}; use a shorter delay or more --hours", param_hint="--delay"
                )
            if delay not in delays:
                delays.append(delay)
        if not delays and not (popularity or uniform):
            raise click.UsageError(
                f"no delay fits a {parameters.hours}-hour day; pass a shorter --delay"
            )
    plot_path: Path | None = options.get("plot_path")
    if plot_path is not None:
        try:
            require_matplotlib()
        except PlotUnavailable as e:
            raise click.ClickException(str(e)) from None
    db: Path | None = options["db"]
    if db is not None:
        _check_db(db)
    else:
        read_settings(synchronous="OFF")  # a bad setting stops the run here, not in a worker
    jobs = options["jobs"] or (1 if db is not None else default_jobs())
    per_seed = options.get("per_seed", DEFAULT_PER_SEED)
    tasks = plan_tasks(seeds, popularity=popularity, uniform=uniform, delays=delays)
    parts = {
        "day": ("popularity", "uniform", "cost", "edits"),
        "staleness": ("popularity", "uniform"),
        "cost": ("cost",),
        "edits": ("edits",),
    }[command]

    def once(trace: bool, progress: bool) -> tuple[dict[str, Any], Workdir]:
        workdir = Workdir(keep=options["keep"])
        settings = Settings(parameters, per_seed, workdir.path, db=db, trace=trace)
        started = time.perf_counter()
        try:
            if progress:
                with click.progressbar(
                    length=len(tasks), label=f"kbes sim {command}", file=sys.stderr
                ) as bar:
                    results, prepare = run_tasks(
                        tasks, settings, jobs=jobs, on_done=lambda _: bar.update(1)
                    )
            else:
                results, prepare = run_tasks(tasks, settings, jobs=jobs)
        except SimulationError as e:
            workdir.close()
            raise click.ClickException(f"the simulation contradicted the method: {e}") from None
        except BaseException:
            workdir.close()
            raise
        wall = time.perf_counter() - started
        figures = report.build_figures(
            command,
            results,
            seeds=seeds,
            parameters=parameters,
            per_seed=per_seed,
            delays=delays,
            wall=wall,
            jobs=min(jobs, len(tasks)),
            prepare=prepare,
        )
        if trace and options["trace_path"] is not None:
            join_traces(results, options["trace_path"])
        return figures, workdir

    if options["benchmark"]:
        timings, load = [], []
        for n in range(options["benchmark"]):
            click.echo(f"benchmark repetition {n + 1} of {options['benchmark']}", err=True)
            load.append(os.getloadavg()[0])
            figures, workdir = once(trace=False, progress=False)
            workdir.close()
            timings.append(figures["timings"])
        rows = sim_benchmark.summarize(timings)
        if options["json_path"]:
            _write_json(
                {"format": report.FORMAT, "benchmark": rows, "load_average": load},
                options["json_path"],
            )
            if options["json_path"] == "-":
                return
        click.echo(
            sim_benchmark.render(
                rows,
                command=command,
                repetitions=options["benchmark"],
                jobs=min(jobs, len(tasks)),
                seeds=len(seeds),
                load=load,
                cores=os.cpu_count(),
            ),
            nl=False,
        )
        return

    figures, workdir = once(
        trace=options["trace_path"] is not None, progress=sys.stderr.isatty() and len(tasks) > 1
    )
    if options["keep"]:
        click.echo(f"databases kept in {workdir.path}", err=True)
    workdir.close()
    if plot_path is not None:
        plot_staleness(figures, plot_path)
        click.echo(f"plot written to {plot_path}", err=True)
    if options["json_path"] == "-":
        _write_json(figures, "-")
        return
    if options["json_path"]:
        _write_json(figures, options["json_path"])
    click.echo(report.render(figures, parts), nl=False)


def _check_db(db: Path) -> None:
    """Open (creating if needed) the --db file once, so a bad path fails before any run; a
    SQLite file of some other program is refused, as every kbes command refuses it."""
    settings = read_settings(str(db), synchronous="NORMAL")
    require_database(str(db), create=True, settings=settings)
    try:
        open_store(settings=settings).close()
    except Exception as e:
        raise click.ClickException(f"cannot use --db {str(db)!r} as a kbes database: {e}") from None


def _write_json(document: dict[str, Any], path: str) -> None:
    data = msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"
    if path == "-":
        click.echo(data.decode(), nl=False)
    else:
        Path(path).write_bytes(data)


__all__ = ["sim"]
