"""Pairs of 1,000,000-character article texts that are hard to diff, shared by the diff tests
and `tests/diff_worst.py` (which times them): difflib's matcher recurses once per short match,
so two texts that match only in short runs scattered through both keep it busy for seconds or
minutes, while ordinary edits of a text as large stay cheap."""

from __future__ import annotations

import random
from collections.abc import Callable

SIZE = 1_000_000
"""Characters in each text (the default content limit)."""


def _fill(lines: list[str], size: int = SIZE) -> str:
    """`lines` joined, cut or padded with a last line to exactly `size` characters."""
    text = "\n".join(lines)
    if len(text) >= size:
        return text[:size]
    return text + "\n" + "z" * (size - len(text) - 1)


def _vocabulary(size: int, width: int = 48) -> list[str]:
    return [f"line {k} ".ljust(width, "y") for k in range(size)]


def scattered(words: int, run: int, seed: int = 1, lines: int = 20_000) -> tuple[str, str]:
    """Old and new: random lines from `words` distinct ones, the new text repeating each run of
    `run` old lines after one line of its own, so every match is short and they are everywhere:
    the matcher's worst case. About 20,000 lines of 50 characters each."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(words)
    old: list[str] = []
    new: list[str] = []
    while len(new) < lines:
        block = [rng.choice(vocabulary) for _ in range(run)]
        old.extend(block)
        new.append(rng.choice(vocabulary))
        new.extend(block)
    old.extend(rng.choice(vocabulary) for _ in range(lines - len(old)))
    return _fill(old), _fill(new[:lines])


def scattered_then_same(head: int, seed: int = 1) -> tuple[str, str]:
    """`scattered(250, 3)` for the first `head` lines, then the same distinct lines in both
    texts: the larger `head`, the longer the matcher works (`tests/diff_worst.py` looks for the
    largest `head` the diff still answers)."""
    old, new = scattered(250, 3, seed, lines=head)
    tail = [f"unchanged line {k} ".ljust(48, "t") for k in range(20_000)]
    return _fill(old.split("\n")[:head] + tail), _fill(new.split("\n")[:head] + tail)


def edited_corpus(changes: int, seed: int = 2) -> tuple[str, str]:
    """An ordinary large edit: a text of repeated prose and code lines (many lines occur
    hundreds of times), with `changes` lines rewritten."""
    rng = random.Random(seed)
    paragraph = [
        "# Refunds",
        "",
        "Refunds are paid within five working days of the request.",
        "    return None",
        "        )",
        "- Contact support with the order number.",
        "",
        "```python",
        "def refund(order):",
        "    return order.total",
        "```",
    ]
    lines: list[str] = []
    while len("\n".join(lines)) < SIZE:
        lines.extend(paragraph)
        lines.append(f"Section {len(lines)}: {rng.random()}")
    old = lines[:]
    for _ in range(changes):
        lines[rng.randrange(len(lines))] = f"rewritten {rng.random()}"
    return _fill(old), _fill(lines)


def rewritten(seed: int = 3) -> tuple[str, str]:
    """Two unrelated texts: no line in common, which the matcher sees at once."""
    return (
        _fill([f"old {seed} {k} ".ljust(48, "o") for k in range(21_000)]),
        _fill([f"new {seed} {k} ".ljust(48, "n") for k in range(21_000)]),
    )


CASES: dict[str, Callable[[], tuple[str, str]]] = {
    "scattered, 1,000 words, runs of 2": lambda: scattered(1000, 2),
    "scattered, 250 words, runs of 3": lambda: scattered(250, 3),
    "scattered, 100 words, runs of 4": lambda: scattered(100, 4),
    "repeated lines, 2,000 rewritten": lambda: edited_corpus(2000),
    "unrelated rewrite": rewritten,
}
"""The pairs `tests/diff_worst.py` times, besides the hardest one the diff still answers."""
