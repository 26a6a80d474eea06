"""Print the worst times of `diff_knowledge_article` and of the approval prompt of an edit on
1,000,000-character articles (issue 18, defect 4): `python tests/diff_worst.py [--runs N]`.

Each pair of `tests/diff_texts.py` is saved as an article's two versions in a throwaway SQLite
store; the diff tool is called from the old version and the approval prompt is built for an
edit from the old content to the new, `--runs` times each, and the median wall and CPU seconds
are printed, with the worst of them last. Besides the pairs built to defeat the matcher (which
the diff now refuses as `too_large_to_diff` and the prompt summarises), it looks for the hardest
pair the diff still answers: the most lines of a scattered head before 20,000 unchanged lines."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from diff_texts import CASES, scattered_then_same

from kbes import KbesError, call_tool, open_store
from kbes.domain.article import markdown
from kbes.domain.errors import DiffTooLarge
from kbes.log.line_diff import bounded_unified_diff
from kbes.server.approval import approval_message
from kbes.store.application import KnowledgeBaseStore
from kbes.tools import TOOLS

TITLE = "Worst case"


def hardest_answered() -> tuple[str, str]:
    """`scattered_then_same(head)` with the largest `head` whose diff is still answered."""

    def answered(head: int) -> bool:
        old, new = scattered_then_same(head)
        try:
            bounded_unified_diff(
                markdown(TITLE, old).splitlines(), markdown(TITLE, new).splitlines()
            )
        except DiffTooLarge:
            return False
        return True

    low, high = 0, 20_000  # answered(low); not answered(high), or high is every line
    while high - low > 16:
        middle = (low + high) // 2
        low, high = (middle, high) if answered(middle) else (low, middle)
    return scattered_then_same(low)


def timed(function: Callable[[], object], runs: int) -> tuple[float, float, str]:
    """Median wall and CPU seconds of `runs` calls, and how the last one ended."""
    walls, cpus = [], []
    ended = ""
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            function()
            ended = "answered"
        except KbesError as e:
            ended = e.code
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), ended


def measure(
    store: KnowledgeBaseStore, old: str, new: str, runs: int
) -> list[tuple[float, float, str]]:
    kb = str(store.create_knowledge_base("Worst case"))
    diffed = store.add_article(kb, TITLE, old, publish=True)
    since = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": str(diffed)}
    ).updated_at
    store.save_article(kb, diffed, content=new)
    asked = str(store.add_article(kb, TITLE, old, publish=True))
    cited = call_tool(
        store, "read_knowledge_article", {"knowledge_base_id": kb, "article_id": asked}
    ).updated_at
    diff_arguments = {"knowledge_base_id": kb, "article_id": str(diffed), "since_version": since}
    edit = TOOLS["edit_knowledge_article"].admit(
        {
            "knowledge_base_id": kb,
            "article_id": asked,
            "content": new,
            "expected_version": cited,
            "idempotency_key": "worst",
        },
        None,
        store.limits,
    )
    return [
        timed(lambda: call_tool(store, "diff_knowledge_article", diff_arguments), runs),
        timed(lambda: approval_message(edit, store), runs),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each measurement (median)")
    runs = parser.parse_args().runs
    cases = {**CASES, "hardest pair the diff answers": hardest_answered}
    worst = {"diff": 0.0, "approval prompt": 0.0}
    worst_cpu = dict(worst)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "worst.sqlite", synchronous="OFF")
        try:
            pair = "pair (1,000,000 characters each)"
            print(f"{pair:40} {'call':16} {'wall s':>7} {'cpu s':>7}  ended")
            for name, make in cases.items():
                old, new = make()
                for call, (wall, cpu, ended) in zip(
                    worst, measure(store, old, new, runs), strict=True
                ):
                    print(f"{name:40} {call:16} {wall:7.3f} {cpu:7.3f}  {ended}", flush=True)
                    worst[call] = max(worst[call], wall)
                    worst_cpu[call] = max(worst_cpu[call], cpu)
        finally:
            store.close()
    for call, wall in worst.items():
        print(
            f"worst {call}: {wall:.3f} s wall, {worst_cpu[call]:.3f} s CPU (medians of {runs} runs)"
        )


if __name__ == "__main__":
    main()
