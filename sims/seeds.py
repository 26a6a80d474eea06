"""The seeds a simulation runs: `kbes sim --seeds` and the label of `kbes bench` row 8 read
them with the one parser, so both count the same seeds."""

from __future__ import annotations

MAX_SEEDS = 1_000
"""A bound on the seeds of one run, so a typo such as 1-100000000 cannot exhaust memory."""


def parse_seeds(text: str) -> list[int]:
    """`1-5`, `3`, `1,4,9` or `1-3,7`: distinct seeds (whole numbers >= 0) in the order given.

    Raises ValueError with a message for the person who typed `text` (the CLI shows it as
    the --seeds error), before any seed runs."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        first, last = _bounds(part, text)
        if "-" in part[1:] and len(seeds) + last - first + 1 > MAX_SEEDS:
            raise ValueError(
                f"{text!r} is more than {MAX_SEEDS:,} seeds; run a smaller range "
                "(seeds 1-100 already take a few minutes)"
            )
        seeds.extend(range(first, last + 1))
    unique = list(dict.fromkeys(seeds))
    if len(unique) > MAX_SEEDS:
        raise ValueError(f"{text!r} is more than {MAX_SEEDS:,} seeds; run a smaller range")
    if not unique:
        raise ValueError("give at least one seed")
    return unique


def _bounds(part: str, text: str) -> tuple[int, int]:
    """First and last seed of one comma-separated part: a range `1-5` or one seed `3`."""
    malformed = f"{text!r}: give seeds as whole numbers >= 0, ranges going upward: 1-5, 3, or 1,4,9"
    try:
        if "-" in part[1:]:
            low, high = part.split("-", 1)
            first, last = int(low), int(high)
        else:
            first = last = int(part)
    except ValueError:
        raise ValueError(malformed) from None
    if last < first or first < 0:
        raise ValueError(malformed)
    return first, last
