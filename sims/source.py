"""The source article's own figures, quoted beside ours in every table.

They were measured with the article's parameters (seeds 1-5, 400 articles, 120 questions,
300 saves over 8 hours, Zipf s = 0.9, 30 edits per seed and delay); the report shows them only
when a run uses the same parameters, since other runs are not comparable to them."""

from __future__ import annotations

from typing import Any

SEEDS = (1, 2, 3, 4, 5)
ARTICLES, QUESTIONS, SAVES, HOURS, ZIPF, EDITS_PER_SEED = 400, 120, 300, 8, 0.9, 30

TOP10_SHARE = 36.7
"""% of the questions and % of the saves that went to the top 10 articles."""

STALENESS: dict[int, dict[str, Any]] = {
    1: {"citations": 152, "stale": 24, "stale_share": 15.8, "answers_share": 56.6, "title": 5},
    2: {"citations": 298, "stale": 61, "stale_share": 20.5, "answers_share": 61.7, "title": 17},
    4: {"citations": 580, "stale": 165, "stale_share": 28.4, "answers_share": 72.1, "title": 56},
    6: {"citations": 914, "stale": 250, "stale_share": 27.4, "answers_share": 69.4, "title": 84},
    8: {
        "citations": 1200,
        "stale": 369,
        "stale_share": 30.8,
        "answers_share": 80.2,
        "title": 152,
    },
}
"""The staleness table, by hour (the article printed hours 1, 2, 4, 6 and 8)."""

ANSWERS = 600
TITLE_SHARE = 41.2
"""The title-only check found 152 of 369 stale citations."""

CONTROL = {
    "stale": 167,
    "citations": 1200,
    "stale_share": 13.9,
    "answers": 280,
    "answers_share": 46.7,
}
"""The uniform control run at the end of the day."""

COST: dict[str, dict[str, float]] = {
    "title": {"calls": 2426, "kib": 3342, "calls_per_check": 60.6, "kib_per_check": 83.5},
    "read": {"calls": 2264, "kib": 3445, "calls_per_check": 56.6, "kib_per_check": 86.1},
    "poll": {"calls": 40, "kib": 153, "calls_per_check": 1.0, "kib_per_check": 3.8},
}
CHECKS = 40

EDITS: dict[int, dict[str, Any]] = {
    20_000_000: {"version_moved": 0, "share": 0.0, "unpublished": 0, "retry": None},
    900_000_000: {"version_moved": 30, "share": 20.0, "unpublished": 2, "retry": (30, 30)},
    3_600_000_000: {"version_moved": 57, "share": 38.0, "unpublished": 3, "retry": (57, 57)},
    14_400_000_000: {"version_moved": 85, "share": 56.7, "unpublished": 14, "retry": (85, 85)},
}
"""The edits table, by delay in microseconds; 150 edits per delay."""

EDITS_PER_DELAY = 150
REPLAYS = (409, 409)
UNPUBLISHED_EDITS = (19, 600)
RUNTIME_SECONDS = 25.7


def same_parameters(
    seeds: tuple[int, ...],
    articles: int,
    questions: int,
    saves: int,
    hours: int,
    zipf: float,
    per_seed: int | None = None,
) -> bool:
    """True when a run is comparable with the article's figures."""
    same = (tuple(seeds), articles, questions, saves, hours, zipf) == (
        SEEDS,
        ARTICLES,
        QUESTIONS,
        SAVES,
        HOURS,
        ZIPF,
    )
    return same and (per_seed is None or per_seed == EDITS_PER_SEED)


def as_dict() -> dict[str, Any]:
    """Every figure of the article, for the `article` key of the JSON output."""
    return {
        "parameters": {
            "seeds": list(SEEDS),
            "articles": ARTICLES,
            "questions": QUESTIONS,
            "saves": SAVES,
            "hours": HOURS,
            "zipf": ZIPF,
            "edits_per_seed": EDITS_PER_SEED,
        },
        "top10_share": TOP10_SHARE,
        "staleness": [{"hour": h, **row} for h, row in STALENESS.items()],
        "title_caught_share": TITLE_SHARE,
        "control": CONTROL,
        "cost": {"checks": CHECKS, "strategies": COST},
        "edits": [
            {
                "delay_seconds": d / 1_000_000,
                "edits": EDITS_PER_DELAY,
                "version_moved": row["version_moved"],
                "version_moved_share": row["share"],
                "unpublished": row["unpublished"],
                "retry_saved": None if row["retry"] is None else row["retry"][0],
            }
            for d, row in EDITS.items()
        ],
        "replays": {"replayed": REPLAYS[0], "first_try_saved": REPLAYS[1]},
        "unpublished_edits": {"unpublished": UNPUBLISHED_EDITS[0], "edits": UNPUBLISHED_EDITS[1]},
        "runtime_seconds": RUNTIME_SECONDS,
    }
