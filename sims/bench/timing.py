"""Wall-time sampling shared by the latency rows."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: p99 of 1,000 samples is the 990th smallest."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def latencies_ms(call: Callable[[Any], object], inputs: Sequence[Any]) -> list[float]:
    """Wall time of each call, in milliseconds, after a short warm-up."""
    for item in inputs[: min(20, len(inputs))]:
        call(item)
    gc.collect()
    clock = time.perf_counter_ns
    out: list[float] = []
    for item in inputs:
        start = clock()
        call(item)
        out.append((clock() - start) / 1e6)
    return out


def latencies_in_turns(
    calls: Sequence[tuple[Callable[[Any], object], Sequence[Any]]],
) -> list[list[float]]:
    """Like `latencies_ms` for several measurements at once, one call of each in turn, so a
    change in the machine's load lands on all of them alike (for rows compared by ratio)."""
    for call, inputs in calls:
        for item in inputs[: min(20, len(inputs))]:
            call(item)
    gc.collect()
    clock = time.perf_counter_ns
    out: list[list[float]] = [[] for _ in calls]
    for i in range(max(len(inputs) for _, inputs in calls)):
        for n, (call, inputs) in enumerate(calls):
            if i < len(inputs):
                start = clock()
                call(inputs[i])
                out[n].append((clock() - start) / 1e6)
    return out
