"""The tables: every figure of a run as one JSON-ready document, and as Markdown tables in the
source article's shape with the article's own figure beside each of ours.

The article's figures are shown only when the run used the article's parameters; for any other
run the `article` columns say so instead of inviting a comparison that means nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbes.sims import source
from kbes.sims.day import DayParameters
from kbes.sims.edits import format_delay
from kbes.sims.experiment import (
    TaskResult,
    cost_figures,
    edits_rows,
    staleness_rows,
    timing_figures,
    top10_figures,
)

FORMAT = "kbes-sim/1"
DASH = "—"


def build_figures(
    command: str,
    results: Sequence[TaskResult],
    *,
    seeds: Sequence[int],
    parameters: DayParameters,
    per_seed: int,
    delays: Sequence[int],
    wall: float,
    jobs: int,
    prepare: tuple[float, float] = (0.0, 0.0),
) -> dict[str, Any]:
    """Every figure of the run, summed over the seeds (the `--json` document)."""
    figures: dict[str, Any] = {
        "format": FORMAT,
        "command": command,
        "parameters": {
            "seeds": list(seeds),
            "articles": parameters.articles,
            "questions": parameters.questions,
            "saves": parameters.saves,
            "hours": parameters.hours,
            "zipf": parameters.zipf,
            "edits_per_seed": per_seed,
            "delays_seconds": [d / 1_000_000 for d in delays],
        },
        "comparable_with_article": source.same_parameters(
            tuple(seeds),
            parameters.articles,
            parameters.questions,
            parameters.saves,
            parameters.hours,
            parameters.zipf,
        ),
        "popularity": top10_figures(results),
    }
    staleness = {}
    for run in ("popularity", "uniform"):
        rows = staleness_rows(results, run)
        if rows:
            staleness[run] = rows
    if staleness:
        figures["staleness"] = staleness
    if "popularity" in staleness:
        figures["cost"] = cost_figures(results)
    edits = edits_rows(results)
    if edits:
        figures["edits"] = edits
        figures["edits_comparable_with_article"] = (
            figures["comparable_with_article"] and per_seed == source.EDITS_PER_SEED
        )
    figures["timings"] = timing_figures(results, wall, jobs, prepare)
    figures["article"] = source.as_dict()
    return figures


def _n(value: int | float) -> str:
    return f"{value:,}"


def _pct(value: float) -> str:
    return f"{value:.1f}%"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: int = 1) -> list[str]:
    align = ["---" if i < right else "---:" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def describe_seeds(seeds: Sequence[int]) -> str:
    """`seeds 1-5`, `seed 3` or `seeds 1, 4, 9`."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def render_header(figures: dict[str, Any]) -> list[str]:
    p = figures["parameters"]
    seeds = p["seeds"]
    seed_text = describe_seeds(seeds)
    lines = [
        f"# kbes sim {figures['command']}: {seed_text}, {p['articles']} articles, "
        f"{p['questions']} questions and {p['saves']} saves over {p['hours']} "
        f"hour{'s' if p['hours'] != 1 else ''}, "
        f"Zipf s = {p['zipf']}",
        "",
    ]
    if not figures["comparable_with_article"]:
        lines += [
            "These are not the article's parameters (seeds 1-5, 400 articles, 120 questions, "
            "300 saves, 8 hours, s = 0.9), so its figures are not shown beside ours.",
            "",
        ]
    top = figures["popularity"]
    if top["questions_total"]:
        article = f" (article: {source.TOP10_SHARE}% of each)"
        lines += [
            f"Popularity: the top 10 articles got {_pct(top['questions_share'])} of the "
            f"questions ({_n(top['questions'])} of {_n(top['questions_total'])}) and "
            f"{_pct(top['saves_share'])} of the saves ({_n(top['saves'])} of "
            f"{_n(top['saves_total'])}); their Zipf weight is {_pct(top['zipf_weight_share'])}"
            + (article if figures["comparable_with_article"] else "")
            + ".",
            "",
        ]
    return lines


def render_staleness(figures: dict[str, Any], run: str) -> list[str]:
    rows = figures["staleness"][run]
    compare = figures["comparable_with_article"]
    per_seed = figures["parameters"]["questions"]
    if run == "popularity":
        title = "## How fast do citations go stale?"
        intro = (
            f"{len(figures['parameters']['seeds'])} seed(s), {per_seed} answers each, two "
            "citations per answer; saves follow popularity (Zipf)."
        )
    else:
        title = "## Control run: the same saves spread uniformly over all articles"
        intro = (
            "Same questions, same save times and kinds; each save's article drawn uniformly "
            "(the article reports the end of the day only)."
        )
    headers = [
        "Hour",
        "Citations so far",
        "article",
        "Stale",
        "article",
        "Answers with a stale citation",
        "article",
        "Title-only check caught",
        "article",
    ]
    table = []
    for row in rows:
        art: dict[str, Any] | None = None
        if compare and run == "popularity":
            art = source.STALENESS.get(row["hour"])
        elif compare and row["hour"] == source.HOURS:
            c = source.CONTROL
            art = {
                "citations": c["citations"],
                "stale": c["stale"],
                "stale_share": c["stale_share"],
                "answers_share": c["answers_share"],
                "answers": c["answers"],
                "title": None,
            }
        ours_title = (
            DASH
            if row["title_caught"] is None
            else f"{_n(row['title_caught'])} of {_n(row['stale'])}"
        )
        table.append(
            [
                str(row["hour"]),
                _n(row["citations"]),
                _n(art["citations"]) if art else DASH,
                f"{_n(row['stale'])} ({_pct(row['stale_share'])})",
                f"{_n(art['stale'])} ({_pct(art['stale_share'])})" if art else DASH,
                f"{_n(row['answers_with_stale'])} of {_n(row['answers'])} "
                f"({_pct(row['answers_with_stale_share'])})",
                (
                    f"{_n(art['answers'])} of {_n(source.ANSWERS)} ({_pct(art['answers_share'])})"
                    if "answers" in art
                    else _pct(art["answers_share"])
                )
                if art
                else DASH,
                ours_title,
                f"{art['title']} of {art['stale']}"
                if art and art.get("title") is not None
                else DASH,
            ]
        )
    lines = [title, "", intro, "", *_table(headers, table), ""]
    last = rows[-1]
    if run == "popularity":
        lines.append(
            f"At hour {last['hour']}: {_n(last['stale'])} stale citations, "
            f"{_n(last['changed'])} changed and {_n(last['gone'])} gone (unpublished). "
            f"The title-only check caught {_n(last['title_caught'])} of {_n(last['stale'])} "
            f"({_pct(last['title_caught_share'])}): every one a retitle or an unpublish, never a "
            "content edit (asserted at every check)"
            + (f"; article: 152 of 369 ({source.TITLE_SHARE}%)." if compare else ".")
        )
    else:
        lines.append(
            f"At hour {last['hour']}: {_n(last['stale'])} of {_n(last['citations'])} citations "
            f"stale ({_pct(last['stale_share'])}), {_n(last['answers_with_stale'])} of "
            f"{_n(last['answers'])} answers ({_pct(last['answers_with_stale_share'])})"
            + (
                f"; article: {source.CONTROL['stale']} of 1,200 "
                f"({source.CONTROL['stale_share']}%), {source.CONTROL['answers']} of 600 "
                f"({source.CONTROL['answers_share']}%)."
                if compare
                else "."
            )
        )
    if last["first_citations"] and last["second_citations"]:
        lines.append(
            f"By position at hour {last['hour']}: the top hits (the articles asked about) "
            f"{_n(last['stale_first'])} of {_n(last['first_citations'])} stale "
            f"({_pct(100 * last['stale_first'] / last['first_citations'])}), the second hits "
            f"{_n(last['stale_second'])} of {_n(last['second_citations'])} "
            f"({_pct(100 * last['stale_second'] / last['second_citations'])})."
        )
    lines.append("")
    return lines


STRATEGY_NAMES = {
    "title": "Re-search each cited title",
    "read": "Re-read each cited article",
    "poll": "poll_resource_events from a cursor",
    "diff": "Poll, then diff only what moved",
    "listen": "Listen to cited articles, read only what moved",
}
KBES_ONLY = "kbes only"
"""The article column of a strategy the article never measured (push is kbes's own)."""


def render_cost(figures: dict[str, Any]) -> list[str]:
    cost = figures["cost"]
    compare = figures["comparable_with_article"]
    headers = ["Strategy", "Calls", "article", "Data returned", "article", "Per check", "article"]
    table = []
    for key, name in STRATEGY_NAMES.items():
        s = cost["strategies"][key]
        a = source.COST.get(key) if compare else None
        if key == "listen":
            table.append(_listen_row(name, s))
            continue
        table.append(
            [
                name,
                _n(s["calls"]),
                _n(int(a["calls"])) if a else DASH,
                f"{_n(round(s['kib']))} KiB",
                f"{_n(int(a['kib']))} KiB" if a else DASH,
                f"{s['calls_per_check']:.1f} calls, {s['kib_per_check']:.1f} KiB",
                f"{a['calls_per_check']:.1f} calls, {a['kib_per_check']:.1f} KiB" if a else DASH,
            ]
        )
    last = figures["staleness"]["popularity"][-1]
    start = cost["cursor_start"]
    seeds = len(figures["parameters"]["seeds"])
    return [
        "## Re-read every cited article, or poll the log?",
        "",
        f"Cost of the hourly checks over the day, summed over the seeds ({cost['checks']} "
        "checks); data is the JSON the agent receives.",
        "",
        *_table(headers, table),
        "",
        "The ID-based strategies found exactly the same stale citations as the ground truth at "
        f"every check (asserted): {_n(last['stale'])} at hour {last['hour']}"
        + (" (article: 369)." if compare else ".")
        + f" The poll cursor was set before the day by paging the feed from 0 past the import "
        f"({_n(start['calls'])} calls, {_n(round(start['bytes'] / 1024))} KiB over {seeds} "
        "seed(s), not counted above).",
        "",
    ]


def _listen_row(name: str, s: dict[str, Any]) -> list[str]:
    """Reads are its calls; the notifications that prompted them are counted beside them (not
    tool calls, and not in its data, which is the reads' JSON)."""
    return [
        name,
        f"{_n(s['calls'])} reads + {_n(s['notifications'])} notifications",
        KBES_ONLY,
        f"{_n(round(s['kib']))} KiB",
        DASH,
        f"{s['calls_per_check']:.1f} reads + {s['notifications_per_check']:.1f} notifications, "
        f"{s['kib_per_check']:.1f} KiB",
        DASH,
    ]


def render_edits(figures: dict[str, Any]) -> list[str]:
    rows = figures["edits"]
    compare = figures.get("edits_comparable_with_article", False)
    headers = [
        "Delay after the read",
        "Edits",
        "Rejected, version moved",
        "article",
        "Rejected, unpublished",
        "article",
        "Retry after a fresh read",
        "article",
    ]
    table = []
    for row in rows:
        a = source.EDITS.get(round(row["delay_seconds"] * 1_000_000)) if compare else None
        retry = (
            f"{_n(row['retry_saved'])} of {_n(row['version_moved'])} saved"
            if row["version_moved"]
            else DASH
        )
        a_retry = DASH
        if a and a["retry"]:
            a_retry = f"{a['retry'][0]} of {a['retry'][1]} saved"
        table.append(
            [
                row["delay"],
                _n(row["edits"]),
                f"{_n(row['version_moved'])} ({_pct(row['version_moved_share'])})",
                f"{a['version_moved']} ({_pct(a['share'])})" if a else DASH,
                _n(row["unpublished"]),
                str(a["unpublished"]) if a else DASH,
                retry,
                a_retry,
            ]
        )
    replays = sum(r["replays_wrote_nothing"] for r in rows)
    first = sum(r["first_try_saved"] for r in rows)
    unpublished = sum(r["unpublished"] for r in rows)
    edits = sum(r["edits"] for r in rows)
    all_four = compare and len(rows) == len(source.EDITS)
    lines = [
        "## What happens when the agent edits with the version from a citation?",
        "",
        f"{len(figures['parameters']['seeds'])} seed(s), {figures['parameters']['edits_per_seed']}"
        " edits per seed and delay, drawn from the answers read early enough for the edit to "
        "fall inside the working day.",
        "",
        *_table(headers, table),
        "",
        f"Idempotency: after each first-try success the same call with the same key was sent "
        f"again: {_n(replays)} of {_n(first)} returned the first result marked as a replay and "
        "wrote no new event (asserted)"
        + (f"; article: {source.REPLAYS[0]} of {source.REPLAYS[1]}." if all_four else "."),
        f"Unpublished: {_n(unpublished)} of {_n(edits)} delayed edits hit an article that had been "
        "unpublished, reported as `gone`, not as a version conflict"
        + (
            f" (article: {source.UNPUBLISHED_EDITS[0]} of {source.UNPUBLISHED_EDITS[1]})."
            if all_four
            else "."
        ),
    ]
    lines.append("")
    return lines


def render_footer(figures: dict[str, Any]) -> list[str]:
    t = figures["timings"]
    compare = figures["comparable_with_article"] and figures["command"] == "day"
    return [
        f"Ran in {t['wall_seconds']:.1f} s with {t['jobs']} worker process(es), "
        f"{t['cpu_seconds']:.1f} s of CPU in all"
        + (f" (the article's whole run: {source.RUNTIME_SECONDS} s)." if compare else "."),
    ]


def render(figures: dict[str, Any], parts: Sequence[str]) -> str:
    """The Markdown report: the header, then each of `parts` present in `figures`."""
    lines = render_header(figures)
    for part in parts:
        if part in ("popularity", "uniform") and part in figures.get("staleness", {}):
            lines += render_staleness(figures, part)
        elif part == "cost" and "cost" in figures:
            lines += render_cost(figures)
        elif part == "edits" and "edits" in figures:
            lines += render_edits(figures)
    lines += render_footer(figures)
    return "\n".join(lines) + "\n"


__all__ = ["build_figures", "format_delay", "render"]
