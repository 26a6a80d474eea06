"""The method of the experiments, on small days: the read and poll strategies equal the ground
truth, the title-only check catches exactly the retitles and unpublishes, edits behave as the
article describes, replays write nothing, and a broken ground truth stops the run loudly."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbes.sims.agent import Agent, SimulationError
from kbes.sims.day import HOUR, Day, DayParameters, generate_day
from kbes.sims.edits import choose_answers, format_delay, parse_delay, run_edits
from kbes.sims.experiment import Settings, Task, plan_tasks, run_tasks
from kbes.sims.people import People, import_articles, open_day_store
from kbes.sims.staleness import Checker, run_staleness
from kbes.sims.trace import NullTrace

SMALL = DayParameters(articles=60, questions=24, saves=80, hours=4)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Day, People, Agent]]:
    day = generate_day(7, SMALL)
    store, clock = open_day_store(day, tmp_path / "day.sqlite", throwaway=True)
    imported = import_articles(store, day, "method")
    people = People(day, store, clock, imported, trace=NullTrace())
    agent = Agent(store, imported.knowledge_base_id, clock_at=lambda: "", trace=NullTrace())
    yield day, people, agent
    people.close()


def test_staleness_run_checks_every_hour_and_agrees_with_the_aggregates(
    world: tuple[Day, People, Agent],
) -> None:
    day, people, agent = world
    run = run_staleness(day, people, agent)  # raises SimulationError on any disagreement
    assert [c.hour for c in run.checks] == [1, 2, 3, 4]
    last = run.checks[-1]
    assert last.answers == SMALL.questions and last.citations == 2 * SMALL.questions
    assert last.stale == last.changed + last.gone and last.stale > 0
    assert last.title_caught is not None and last.title_caught < last.stale
    assert last.answers_with_stale <= min(last.stale, last.answers)
    # Fewer than 100 changes an hour: one poll per check.
    assert all(c.calls["poll"] == 1 for c in run.checks)
    assert all(c.bytes["poll"] < c.bytes["read"] for c in run.checks if c.calls["read"] > 2)
    # The ground truth the checks used is the store's own: every aggregate agrees with it.
    for article_id in people.article_ids:
        article = people.store.get_article(article_id)
        assert people.truth(article_id) == (article.updated_at, article.published)


def test_a_wrong_ground_truth_fails_loudly(world: tuple[Day, People, Agent]) -> None:
    day, people, agent = world
    checker = Checker(people, agent)
    checker.start_cursor()
    question = day.questions[0]
    people.at(question.at)
    cited = agent.answer(question)
    first = cited[0].article_id
    version, published = people.current[first]
    people.current[first] = (version.replace(year=version.year + 1), published)
    with pytest.raises(SimulationError, match="ground truth"):
        checker.check(1, cited, 1)


def test_edits_reject_moved_versions_retry_and_replay_without_writing(
    world: tuple[Day, People, Agent],
) -> None:
    day, people, agent = world
    outcome = run_edits(day, people, agent, parse_delay("1h"), per_seed=12)
    assert outcome.edits == 12
    assert outcome.first_try_saved + outcome.version_moved + outcome.unpublished == 12
    assert outcome.version_moved > 0, "an hour on a popular article moves its version"
    assert outcome.retry_saved == outcome.version_moved
    assert outcome.replays == outcome.replays_wrote_nothing == outcome.first_try_saved
    assert agent.meter.calls["edit:replay"] == outcome.first_try_saved


def test_edits_runs_play_only_the_edited_answers_without_changing_outcomes(
    tmp_path: Path,
) -> None:
    """The other answers are read-only calls: leaving them out must change nothing."""
    day = generate_day(7, SMALL)
    outcomes = []
    for every_answer in (False, True):
        store, clock = open_day_store(day, tmp_path / f"{every_answer}.sqlite", throwaway=True)
        imported = import_articles(store, day, "edits")
        people = People(day, store, clock, imported, trace=NullTrace())
        agent = Agent(store, imported.knowledge_base_id, clock_at=lambda: "", trace=NullTrace())
        outcome = run_edits(
            day, people, agent, parse_delay("15min"), per_seed=10, every_answer=every_answer
        )
        outcomes.append((dataclasses.astuple(outcome), agent.meter.calls["answer"]))
        people.close()
    assert outcomes[0][0] == outcomes[1][0]
    assert outcomes[0][1] < outcomes[1][1] == 3 * SMALL.questions


def test_choose_answers_keeps_every_edit_inside_the_day() -> None:
    day = generate_day(1, DayParameters())
    four_hours = parse_delay("4h")
    chosen = choose_answers(day.questions, four_hours, 8 * HOUR, 30)
    assert len(chosen) == 30 == len(set(chosen))
    read_at = {q.number: q.at for q in day.questions}
    assert all(read_at[n] + four_hours < 8 * HOUR for n in chosen)
    assert choose_answers(day.questions, 8 * HOUR, 8 * HOUR, 30) == []


@pytest.mark.parametrize(
    ("text", "microseconds", "shown"),
    [
        ("20s", 20_000_000, "20 s"),
        ("15min", 900_000_000, "15 min"),
        ("15m", 900_000_000, "15 min"),
        ("1h", 3_600_000_000, "1 h"),
        ("1h30m", 5_400_000_000, "1 h 30 min"),
        ("90", 90_000_000, "1 min 30 s"),
        ("0s", 0, "0 s"),
    ],
)
def test_delays_parse_and_print(text: str, microseconds: int, shown: str) -> None:
    assert parse_delay(text) == microseconds
    assert format_delay(microseconds) == shown


@pytest.mark.parametrize("text", ["", "h", "5x", "-1h", "1h 2y"])
def test_bad_delays_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_delay(text)


@pytest.mark.slow
def test_figures_do_not_depend_on_the_number_of_workers(tmp_path: Path) -> None:
    tasks = plan_tasks([1, 2], popularity=True, uniform=True, delays=[parse_delay("1h")])
    figures = []
    for jobs in (1, 2):
        work = tmp_path / f"jobs{jobs}"
        work.mkdir()
        results, _ = run_tasks(tasks, Settings(SMALL, 8, work), jobs=jobs)
        figures.append(
            [
                (r.task, r.staleness and r.staleness.checks, r.edits, r.calls, r.bytes)
                for r in results
            ]
        )
    assert figures[0] == figures[1]
    assert [t for t, *_ in figures[0]] == [
        Task(1, "popularity"),
        Task(1, "uniform"),
        Task(1, "edits", parse_delay("1h")),
        Task(2, "popularity"),
        Task(2, "uniform"),
        Task(2, "edits", parse_delay("1h")),
    ]
