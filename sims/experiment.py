"""Running the experiments: one fresh store per run (seed x experiment), and the figures summed
over the seeds.

Every run of a seed starts from the same import, so each seed's articles are imported once and
the file is copied for each of its runs. A run is then independent of every other (its own
database file, its own simulated clock), so runs go to a pool of worker processes, one per core
by default; the figures do not depend on the order or the number of workers. Each worker writes
its own trace part; they are joined in run order afterwards, so a trace lists the runs in the
same order whatever `--jobs` was (ids are random UUIDs; every figure is the same)."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from kbes import format_timestamp
from kbes.sims.agent import Agent
from kbes.sims.day import Day, DayParameters, Variant, generate_day
from kbes.sims.edits import EditsRun, format_delay, run_edits
from kbes.sims.people import Imported, People, import_articles, open_day_store
from kbes.sims.staleness import STRATEGIES, StalenessRun, run_staleness
from kbes.sims.trace import NullTrace, Trace

RunKind = Literal["popularity", "uniform", "edits"]


@dataclass(frozen=True)
class Task:
    """One run: a seed's day, played for one experiment."""

    seed: int
    run: RunKind
    delay: int | None = None

    @property
    def name(self) -> str:
        if self.run == "edits":
            return f"seed {self.seed} edits {format_delay(self.delay or 0)}"
        return f"seed {self.seed} {self.run}"

    @property
    def slug(self) -> str:
        suffix = f"-{self.delay}us" if self.run == "edits" else ""
        return f"seed{self.seed}-{self.run}{suffix}"


@dataclass(frozen=True)
class Settings:
    parameters: DayParameters
    per_seed: int
    workdir: Path
    db: Path | None = None
    trace: bool = False


@dataclass
class TaskResult:
    task: Task
    staleness: StalenessRun | None = None
    edits: EditsRun | None = None
    top10: tuple[int, int, int, int, float] = (0, 0, 0, 0, 0.0)
    """Questions on the top 10, questions, saves on the top 10, saves, Zipf weight of the top 10."""
    calls: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    trace_part: str | None = None


@functools.lru_cache(maxsize=16)
def _day(seed: int, parameters: DayParameters, variant: Variant) -> Day:
    """A worker playing several runs of one seed generates that seed's day once."""
    return generate_day(seed, parameters, variant)


@dataclass(frozen=True)
class Prepared:
    """A seed's store with the articles imported (and the views built): each of the seed's runs
    starts from a copy of it, since every run of a seed starts from the same import. None when
    the runs share a `--db` file, where each run imports into a knowledge base of its own."""

    seed: int
    path: str | None = None
    imported: Imported | None = None
    seconds: float = 0.0
    cpu: float = 0.0


def prepare_seed(seed: int, settings: Settings) -> Prepared:
    """Import the seed's articles once into a template store (closed, so it is one file)."""
    if settings.db is not None:
        return Prepared(seed)
    started, cpu = time.perf_counter(), time.process_time()
    day = _day(seed, settings.parameters, "popularity")
    path = settings.workdir / f"seed{seed}.template.sqlite"
    store, _ = open_day_store(day, path, throwaway=True)
    try:
        imported = import_articles(store, day, f"kbes sim seed {seed}")
    finally:
        store.close()
    return Prepared(
        seed, str(path), imported, time.perf_counter() - started, time.process_time() - cpu
    )


def _copy_store(source: str, destination: Path) -> None:
    for suffix in ("", "-wal"):
        if os.path.exists(source + suffix):
            shutil.copyfile(source + suffix, str(destination) + suffix)


def run_task(task: Task, settings: Settings, prepared: Prepared) -> TaskResult:
    """Play one run in a copy of the seed's imported store (or its own knowledge base of the
    `--db` file)."""
    seconds: defaultdict[str, float] = defaultdict(float)
    started, cpu = time.perf_counter(), time.process_time()
    variant: Variant = "uniform" if task.run == "uniform" else "popularity"
    day = _day(task.seed, settings.parameters, variant)
    seconds["generate"] += time.perf_counter() - started

    trace_part = settings.workdir / f"{task.slug}.trace.jsonl" if settings.trace else None
    trace: Trace = NullTrace()
    if trace_part is not None:
        trace_part.unlink(missing_ok=True)
        trace = Trace(trace_part, seed=task.seed, run=task.run)
        trace.write(
            "run",
            parameters=asdict(settings.parameters),
            delay_seconds=None if task.delay is None else task.delay / 1_000_000,
            day_start=format_timestamp(day.start),
        )
        for q in day.questions:
            trace.write(
                "question",
                number=q.number,
                at=format_timestamp(day.instant(q.at)),
                article=q.article,
                query=q.query,
            )

    started = time.perf_counter()
    if prepared.path is not None and prepared.imported is not None:
        db = settings.workdir / f"{task.slug}.sqlite"
        _copy_store(prepared.path, db)
        store, clock = open_day_store(day, db, throwaway=True)
        imported = prepared.imported
    else:
        assert settings.db is not None  # no template only when the runs share a --db file
        store, clock = open_day_store(day, settings.db, throwaway=False)
        imported = import_articles(store, day, f"kbes sim: {task.name}")
    people = People(day, store, clock, imported, trace=trace)
    seconds["setup"] += time.perf_counter() - started
    agent = Agent(
        store,
        people.knowledge_base_id,
        clock_at=lambda: format_timestamp(clock.now()),
        trace=trace,
    )
    result = TaskResult(task=task)
    try:
        if task.run == "edits":
            result.edits = run_edits(day, people, agent, task.delay or 0, settings.per_seed)
        else:
            result.staleness = run_staleness(
                day, people, agent, title_check=task.run == "popularity"
            )
    finally:
        people.close()
        trace.close()
    top = {i for i, r in enumerate(day.rank) if r <= 10}
    result.top10 = (
        sum(1 for q in day.questions if q.article in top),
        len(day.questions),
        sum(1 for s in day.saves if s.article in top),
        len(day.saves),
        sum(day.weights[:10]),
    )
    for phase, spent in agent.meter.seconds.items():
        seconds[phase] += spent
    seconds["total"] = time.perf_counter() - started + seconds["generate"]
    seconds["cpu"] = time.process_time() - cpu
    result.calls = dict(agent.meter.calls)
    result.bytes = dict(agent.meter.bytes)
    result.seconds = dict(seconds)
    result.trace_part = str(trace_part) if trace_part else None
    return result


def plan_tasks(
    seeds: Sequence[int], *, popularity: bool, uniform: bool, delays: Sequence[int]
) -> list[Task]:
    tasks: list[Task] = []
    for seed in seeds:
        if popularity:
            tasks.append(Task(seed, "popularity"))
        if uniform:
            tasks.append(Task(seed, "uniform"))
        tasks.extend(Task(seed, "edits", d) for d in delays)
    return tasks


_COST_ORDER = {"popularity": 0, "uniform": 1, "edits": 2}


def run_tasks(
    tasks: Sequence[Task],
    settings: Settings,
    *,
    jobs: int = 1,
    on_done: Callable[[TaskResult], None] | None = None,
) -> tuple[list[TaskResult], tuple[float, float]]:
    """Prepare each seed's import, then run every task. Returns the results in task order
    (whatever the number of workers) and the wall and CPU seconds spent on the imports. Workers take
    the longest runs first, so they finish together."""
    seeds = list(dict.fromkeys(t.seed for t in tasks))
    order = sorted(
        range(len(tasks)), key=lambda i: (_COST_ORDER[tasks[i].run], -(tasks[i].delay or 0))
    )
    results: list[TaskResult | None] = [None] * len(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        prepared = {seed: prepare_seed(seed, settings) for seed in seeds}
        for i in order:
            result = run_task(tasks[i], settings, prepared[tasks[i].seed])
            results[i] = result
            if on_done:
                on_done(result)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
            prepared = dict(
                zip(seeds, pool.map(prepare_seed, seeds, [settings] * len(seeds)), strict=True)
            )
            futures = {
                pool.submit(run_task, tasks[i], settings, prepared[tasks[i].seed]): i for i in order
            }
            for future in as_completed(futures):
                result = future.result()
                results[futures[future]] = result
                if on_done:
                    on_done(result)
    done = [r for r in results if r is not None]
    return done, (
        sum(p.seconds for p in prepared.values()),
        sum(p.cpu for p in prepared.values()),
    )


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


class Workdir:
    """Where a run keeps its databases: a fresh temporary folder, removed afterwards unless
    kept. A `--db` file, given by the user, is never removed."""

    def __init__(self, keep: bool) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="kbes-sim-"))
        self.keep = keep

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)


def join_traces(results: Sequence[TaskResult], destination: Path) -> None:
    """Concatenate the runs' trace parts, in run order, into `destination`."""
    with destination.open("wb") as out:
        for r in results:
            if r.trace_part:
                with open(r.trace_part, "rb") as part:
                    shutil.copyfileobj(part, out)


# Figures ---------------------------------------------------------------------------------


def _share(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


def staleness_rows(results: Sequence[TaskResult], run: RunKind) -> list[dict[str, Any]]:
    """Per hour, summed over seeds."""
    rows: dict[int, Counter[str]] = {}
    for r in results:
        if r.task.run != run or r.staleness is None:
            continue
        for c in r.staleness.checks:
            row = rows.setdefault(c.hour, Counter())
            for key in (
                "citations", "answers", "stale", "changed", "gone", "answers_with_stale",
                "stale_first", "first_citations",
            ):  # fmt: skip
                row[key] += getattr(c, key)
            if c.title_caught is None:
                row["title_not_run"] = 1
            else:
                row["title_caught"] += c.title_caught
    out = []
    for hour in sorted(rows):
        row = rows[hour]
        out.append(
            {
                "hour": hour,
                "citations": row["citations"],
                "stale": row["stale"],
                "stale_share": _share(row["stale"], row["citations"]),
                "changed": row["changed"],
                "gone": row["gone"],
                "answers": row["answers"],
                "answers_with_stale": row["answers_with_stale"],
                "answers_with_stale_share": _share(row["answers_with_stale"], row["answers"]),
                "stale_first": row["stale_first"],
                "first_citations": row["first_citations"],
                "stale_second": row["stale"] - row["stale_first"],
                "second_citations": row["citations"] - row["first_citations"],
                "title_caught": None if row["title_not_run"] else row["title_caught"],
                "title_caught_share": None
                if row["title_not_run"]
                else _share(row["title_caught"], row["stale"]),
            }
        )
    return out


def cost_figures(results: Sequence[TaskResult]) -> dict[str, Any]:
    """Calls and KiB per strategy over every check of the popularity-driven runs."""
    checks = 0
    calls: Counter[str] = Counter()
    size: Counter[str] = Counter()
    cursor_calls = cursor_bytes = 0
    answer_calls = answer_bytes = 0
    notifications = 0
    for r in results:
        if r.task.run != "popularity" or r.staleness is None:
            continue
        checks += len(r.staleness.checks)
        for c in r.staleness.checks:
            calls.update(c.calls)
            size.update(c.bytes)
            notifications += c.notifications
        cursor_calls += r.staleness.cursor_start_calls
        cursor_bytes += r.staleness.cursor_start_bytes
        answer_calls += r.calls.get("answer", 0)
        answer_bytes += r.bytes.get("answer", 0)
    strategies = {}
    for s in STRATEGIES:
        kib = size[s] / 1024
        strategies[s] = {
            "calls": calls[s],
            "bytes": size[s],
            "kib": round(kib, 1),
            "calls_per_check": round(calls[s] / checks, 1) if checks else 0.0,
            "kib_per_check": round(kib / checks, 1) if checks else 0.0,
        }
    strategies["listen"]["notifications"] = notifications
    strategies["listen"]["notifications_per_check"] = (
        round(notifications / checks, 1) if checks else 0.0
    )
    return {
        "checks": checks,
        "strategies": strategies,
        "cursor_start": {"calls": cursor_calls, "bytes": cursor_bytes},
        "answering": {"calls": answer_calls, "bytes": answer_bytes},
    }


def edits_rows(results: Sequence[TaskResult]) -> list[dict[str, Any]]:
    by_delay: dict[int, Counter[str]] = {}
    for r in results:
        if r.edits is None:
            continue
        row = by_delay.setdefault(r.edits.delay, Counter())
        for key, value in asdict(r.edits).items():
            if key != "delay":
                row[key] += value
    out = []
    for delay in sorted(by_delay):
        row = by_delay[delay]
        out.append(
            {
                "delay": format_delay(delay),
                "delay_seconds": delay / 1_000_000,
                "edits": row["edits"],
                "eligible_answers": row["eligible_answers"],
                "first_try_saved": row["first_try_saved"],
                "version_moved": row["version_moved"],
                "version_moved_share": _share(row["version_moved"], row["edits"]),
                "unpublished": row["unpublished"],
                "retried": row["version_moved"],
                "retry_saved": row["retry_saved"],
                "replays": row["replays"],
                "replays_wrote_nothing": row["replays_wrote_nothing"],
                "no_citation": row["no_citation"],
            }
        )
    return out


def top10_figures(results: Sequence[TaskResult]) -> dict[str, Any]:
    seen: dict[int, tuple[int, int, int, int, float]] = {}
    for r in results:
        if r.task.run == "popularity":
            seen[r.task.seed] = r.top10
    if not seen:  # only edits or uniform runs: their questions follow the same ranking
        for r in results:
            if r.task.run == "edits":
                seen.setdefault(r.task.seed, r.top10)
    q = sum(v[0] for v in seen.values())
    nq = sum(v[1] for v in seen.values())
    s = sum(v[2] for v in seen.values())
    ns = sum(v[3] for v in seen.values())
    weight = next(iter(seen.values()))[4] if seen else 0.0
    return {
        "questions": q,
        "questions_total": nq,
        "questions_share": _share(q, nq),
        "saves": s,
        "saves_total": ns,
        "saves_share": _share(s, ns),
        "zipf_weight_share": round(100 * weight, 1),
    }


def timing_figures(
    results: Sequence[TaskResult], wall: float, jobs: int, prepare: tuple[float, float]
) -> dict[str, Any]:
    """Wall time of the command, and per run kind and phase the wall time summed over the
    runs (overlapping when runs go to several workers); `cpu_seconds` is the CPU time of all
    runs, which other processes on the machine do not inflate."""
    parts: defaultdict[str, float] = defaultdict(float)
    by_run: defaultdict[str, float] = defaultdict(float)
    if prepare[0]:
        by_run["import, once per seed"] = prepare[0]
    cpu = prepare[1]
    for r in results:
        cpu += r.seconds.get("cpu", 0.0)
        for phase, spent in r.seconds.items():
            if phase != "cpu":
                parts[phase] += spent
        key = "edits " + format_delay(r.task.delay or 0) if r.task.run == "edits" else r.task.run
        key = {"popularity": "popularity-driven day", "uniform": "uniform control day"}.get(
            key, key
        )
        by_run[key] += r.seconds.get("total", 0.0)
    return {
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "jobs": jobs,
        "phases": {k: round(v, 3) for k, v in sorted(parts.items())},
        "runs": {k: round(v, 3) for k, v in by_run.items()},
    }
