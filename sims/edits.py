"""The edits experiment: the agent edits with the version from its citation, after a delay.

On the same day as the staleness run, after an answer the agent waits `delay`, then edits the
first article it cited, passing the citation's `updated_at` as `expected_version` and a key of
its own as `idempotency_key`; the change is a note appended to the content it read. Outcomes:

- saved on the first try: the same call, same key, is sent again and must come back as a
  replay of the first result, writing no event;
- `version_conflict` (the version moved): read again, re-apply the note to the current
  content, retry with the new version (the rejected call consumed no key, so the retry reuses
  it); count the retries that are saved;
- `gone` (the article was unpublished): no retry.

Which answers are edited: `per_seed` of them, spread evenly over the answers read early enough
that `read + delay` is still inside the working day. Only those answers are played (the others
are read-only calls that change nothing in the log). So every edit faces a full `delay` of
people's saves, and no edit is made after the day has ended; a delay as long as the day leaves
no answer to edit (an error, not a silent zero)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from kbes import KbesError, format_timestamp
from kbes.sims.agent import Agent, Cited, SimulationError
from kbes.sims.day import HOUR, Day, Question
from kbes.sims.people import People
from kbes.sims.timeline import play_day

DEFAULT_DELAYS = ("20s", "15min", "1h", "4h")
DEFAULT_PER_SEED = 30
"""150 edits per delay over five seeds, as in the source article."""

_UNITS = {
    "us": 1,
    "ms": 1_000,
    "s": 1_000_000,
    "sec": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "h": HOUR,
    "hr": HOUR,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(us|ms|sec|s|min|m|hr|h)")


def parse_delay(text: str) -> int:
    """A duration such as `20s`, `15min`, `1h`, `1h30m` or `90` (seconds), in microseconds."""
    raw = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        return round(float(raw) * 1_000_000)
    position, total = 0, 0.0
    for match in _PART.finditer(raw):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(raw) or not raw:
        raise ValueError(
            f"{text!r} is not a duration; use e.g. 20s, 15min, 1h, 4h or 1h30m "
            "(units: us, ms, s, min/m, h)"
        )
    return round(total)


def format_delay(microseconds: int) -> str:
    """The shortest readable form: 20 s, 15 min, 1 h, 1 h 30 min."""
    if microseconds % 1_000_000:
        return f"{microseconds / 1_000_000:g} s"
    seconds = microseconds // 1_000_000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{seconds} s" if seconds or not any(parts) else "")
    return " ".join(p for p in parts if p)


@dataclass
class EditsRun:
    """The outcomes of one run's edits for one delay."""

    delay: int
    eligible_answers: int
    edits: int
    first_try_saved: int = 0
    version_moved: int = 0
    unpublished: int = 0
    retry_saved: int = 0
    replays: int = 0
    replays_wrote_nothing: int = 0
    no_citation: int = 0


def choose_answers(questions: list[Question], delay: int, day_length: int, n: int) -> list[int]:
    """`n` answer numbers spread evenly over the answers whose edit falls inside the day."""
    eligible = [q.number for q in questions if q.at + delay < day_length]
    if len(eligible) <= n:
        return eligible
    return [eligible[(2 * k + 1) * len(eligible) // (2 * n)] for k in range(n)]


def run_edits(
    day: Day,
    people: People,
    agent: Agent,
    delay: int,
    per_seed: int,
    *,
    every_answer: bool = False,
) -> EditsRun:
    """Play the day with the edits of the chosen answers scheduled at `read + delay`.
    `every_answer` also plays the answers nobody edits (the outcomes are the same; a test
    checks it)."""
    chosen = set(choose_answers(day.questions, delay, day.parameters.length, per_seed))
    eligible = sum(1 for q in day.questions if q.at + delay < day.parameters.length)
    outcome = EditsRun(delay=delay, eligible_answers=eligible, edits=len(chosen))
    cited: dict[int, list[Cited]] = {}
    # Only the answers that will be edited are played: the others are read-only tool calls,
    # which change nothing in the log, so leaving them out changes no outcome here.
    meter = agent.meter

    def answer(question: Question) -> None:
        cited[question.number] = agent.answer(question)

    def edit(at: int, number: int) -> None:
        started = time.perf_counter()
        _edit(day, people, agent, cited[number], number, at, outcome)
        meter.seconds["edits"] += time.perf_counter() - started

    play_day(
        day,
        people,
        agent,
        [q for q in day.questions if every_answer or q.number in chosen],
        answer,
        [(q.at + delay, q.number) for q in day.questions if q.number in chosen],
        edit,
    )
    return outcome


def _note(answer: int) -> str:
    return f"\n\nNote from the assistant (answer {answer}): the steps above were checked."


def _edit(
    day: Day, people: People, agent: Agent, citations: list[Cited], answer: int, at: int,
    outcome: EditsRun,
) -> None:  # fmt: skip
    if not citations:
        outcome.no_citation += 1
        return
    first = citations[0]
    key = f"answer-{answer}-note"
    arguments = (first.article_id, first.content + _note(answer), first.stamp, key)
    result = agent.edit("edit", *arguments)
    verdict = "saved"
    if isinstance(result, KbesError):
        if result.code == "gone":
            outcome.unpublished += 1
            verdict = "gone"
        elif result.code == "version_conflict":
            outcome.version_moved += 1
            verdict = "version_moved"
            fresh = agent.read("edit:reread", first.article_id)
            if isinstance(fresh, KbesError):
                raise SimulationError(f"answer {answer}: re-read before retry: {fresh.to_dict()}")
            retry = agent.edit(
                "edit:retry",
                first.article_id,
                fresh.content + _note(answer),
                fresh.citation.updated_at,
                key,
            )
            if isinstance(retry, KbesError):
                verdict = f"version_moved, retry refused: {retry.code}"
            else:
                outcome.retry_saved += 1
                verdict = "version_moved, retry saved"
        else:
            raise SimulationError(f"answer {answer}: edit refused: {result.to_dict()}")
    else:
        if result.replay:
            raise SimulationError(f"answer {answer}: a first call came back as a replay")
        outcome.first_try_saved += 1
        head = people.head()
        again = agent.edit("edit:replay", *arguments)
        if isinstance(again, KbesError) or not again.replay:
            raise SimulationError(f"answer {answer}: the repeated call was not a replay")
        outcome.replays += 1
        same = (again.article_id, again.title, again.updated_at, again.citation) == (
            result.article_id,
            result.title,
            result.updated_at,
            result.citation,
        )
        if not same or people.head() != head:
            raise SimulationError(
                f"answer {answer}: the replay differed from the first result or wrote an event"
            )
        outcome.replays_wrote_nothing += 1
    if agent.trace.enabled:
        agent.trace.write(
            "edit",
            at=format_timestamp(day.instant(at)),
            answer=answer,
            article_id=first.article_id,
            expected_version=first.stamp,
            outcome=verdict,
        )
