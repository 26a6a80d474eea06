"""Unified diffs of lines with bounded work, so that no pair of texts holds a CPU for minutes.

difflib's matcher is quadratic in the expected case and cubic in the worst (its documentation
says so): two texts of 20,000 lines built to defeat it keep a core busy for many seconds, and a
server that diffs them for any caller can be starved. So the matcher here is difflib's own,
counting the steps of its `find_longest_match` calls, each bounded from above before the call
(`LINE_STEPS` per line of the call's range of `a`, as a line costs the matcher a few times what
one occurrence does, plus one per occurrence in `b` of such a line that the matcher indexes):
past `budget` steps it gives up with `DiffTooLarge`. Under the budget, the
diff is the one `difflib.unified_diff` gives, byte for byte (`tests/test_line_diff.py`); this
module writes the unified format from the matcher's grouped opcodes, so the work is done once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence

from kbes.domain.errors import DiffTooLarge

DIFF_BUDGET = 6_000_000
"""Most matcher steps one diff may take (see the module's docstring): well under a second of
CPU, enough for a rewrite of a 1,000,000-character article or for many edits of it, not for
thousands of edits scattered through it or texts built to defeat the matcher.
`tests/diff_worst.py` prints the worst times it allows."""
LINE_STEPS = 4
"""What one line of `a` in a call's range counts, in steps."""


class _CountingMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """difflib's matcher (with `unified_diff`'s settings), stopped at `budget` steps."""

    def __init__(self, a: Sequence[str], b: Sequence[str], budget: int) -> None:
        super().__init__(None, a, b)
        self.lines = (len(a), len(b))
        self.budget = budget
        self.spent = 0
        # `b2j`, the lines of `b` the matcher indexes (popular ones are not) and where, is a
        # documented attribute ("SequenceMatcher objects get three data attributes"), which
        # typeshed does not declare.
        indexed: dict[str, list[int]] = self.b2j  # type: ignore[attr-defined]
        # steps[i]: the most steps the lines a[:i] can cost one call, so a call's bound is
        # one subtraction, whatever its range.
        self.steps = [0]
        for line in a:
            self.steps.append(self.steps[-1] + LINE_STEPS + len(indexed.get(line, ())))

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        top = self.lines[0] if ahi is None else ahi
        self.spent += self.steps[top] - self.steps[alo] + LINE_STEPS
        if self.spent > self.budget:
            raise DiffTooLarge(*self.lines, self.budget)
        return super().find_longest_match(alo, ahi, blo, bhi)


def bounded_unified_diff(
    a: Sequence[str],
    b: Sequence[str],
    *,
    fromfile: str = "",
    tofile: str = "",
    n: int = 3,
    budget: int = DIFF_BUDGET,
) -> list[str]:
    """The lines of `difflib.unified_diff(a, b, fromfile, tofile, n=n, lineterm="")`, or
    `DiffTooLarge` when finding them would take more than `budget` matcher steps."""
    matcher = _CountingMatcher(a, b, budget)
    return list(_unified(matcher.get_grouped_opcodes(n), a, b, fromfile, tofile))


def _unified(
    groups: Iterable[list[tuple[str, int, int, int, int]]],
    a: Sequence[str],
    b: Sequence[str],
    fromfile: str,
    tofile: str,
) -> Iterator[str]:
    """The unified format: the two names, then each hunk's `@@` line and its lines."""
    for index, group in enumerate(groups):
        if index == 0:
            yield f"--- {fromfile}"
            yield f"+++ {tofile}"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (f" {line}" for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from (f"-{line}" for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from (f"+{line}" for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's lines in the unified format: `first,count`; the first alone for one line; for
    none, the line before them and `,0`."""
    count = stop - start
    if count == 1:
        return str(start + 1)
    return f"{start + 1 if count else start},{count}"
