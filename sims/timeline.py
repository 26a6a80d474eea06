"""Playing a simulated day in time order, the one rule every experiment shares: at one
instant, people's saves land first, then the agent's answers, then the experiment's own steps
(an hourly check, a delayed edit), so a step always sees what happened up to its instant."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kbes.sims.agent import Agent
from kbes.sims.day import Day, Question
from kbes.sims.people import People


def play_day(
    day: Day,
    people: People,
    agent: Agent,
    questions: Iterable[Question],
    on_answer: Callable[[Question], None],
    steps: Iterable[tuple[int, Any]],
    on_step: Callable[[int, Any], None],
) -> None:
    """Apply the day's saves, answer `questions` (calling `on_answer` for each) and run
    `on_step(at, item)` for each of `steps`, in time order; the meter times saves and answers."""
    timeline: list[tuple[int, int, Any]] = [(s.at, 0, s) for s in day.saves]
    timeline += [(q.at, 1, q) for q in questions]
    timeline += [(at, 2, item) for at, item in steps]
    timeline.sort(key=lambda entry: (entry[0], entry[1]))
    meter = agent.meter
    for at, what, item in timeline:
        people.at(at)
        started = time.perf_counter()
        if what == 0:
            people.apply(item)
            meter.seconds["saves"] += time.perf_counter() - started
        elif what == 1:
            on_answer(item)
            meter.seconds["answers"] += time.perf_counter() - started
        else:
            on_step(at, item)
