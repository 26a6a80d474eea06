"""docs/security.md promises nothing that no test holds: each row of its promises table names
tests as `tests/FILE.py::test_name`, and each named test must exist (found by parsing the file,
so a renamed or deleted test breaks this one, not the page's reader). What the page says kbes
does NOT promise is held as tests too, so that a change which closes (or widens) a gap also
changes the page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tool_calls import call

from kbes import KnowledgeBaseStore

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "security.md"
PROMISES = "## What kbes promises"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def promises(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each promise row of the page: its text and the (file, test) pairs it names."""
    section = text.split(PROMISES, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.strip().splitlines() if line.strip()]
    assert all(line.startswith("|") for line in lines), (
        "the promises section is one table, so no promise is stated outside it"
    )
    rows = lines[2:]  # after the header and its rule
    return [(row.split("|")[1].strip(), REFERENCE.findall(row)) for row in rows]


def defined_tests(path: Path) -> set[str]:
    """The test functions a file defines at module level (where pytest collects them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        node.name
        for node in tree.body
        if isinstance(node, functions) and node.name.startswith("test_")
    }


def untested(text: str) -> list[str]:
    """What is wrong with the page's promises: a row naming no test, or a test that is not."""
    problems = []
    for promise, references in promises(text):
        if not references:
            problems.append(f"no test named for: {promise}")
        for file, name in references:
            path = ROOT / file
            if not path.is_file() or name not in defined_tests(path):
                problems.append(f"{file}::{name} does not exist (for: {promise})")
    return problems


def test_every_promise_names_tests_that_exist() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(promises(text)) >= 15
    assert untested(text) == []


def test_every_test_the_page_names_elsewhere_exists() -> None:
    """The limits the page states may name tests too; those must exist as well."""
    text = PAGE.read_text(encoding="utf-8")
    missing = [
        f"{file}::{name}"
        for file, name in REFERENCE.findall(text)
        if not (ROOT / file).is_file() or name not in defined_tests(ROOT / file)
    ]
    assert missing == []


def test_a_promise_without_a_real_test_is_caught() -> None:
    text = f"{PROMISES}\n\n| Promise | Held by |\n|---|---|\n" + (
        "| Grants hold. | `tests/test_tools.py::test_drafts_are_invisible_everywhere` |\n"
        "| Nothing leaks. | |\n"
        "| Tokens hold. | `tests/test_mcp_http.py::test_that_was_renamed` |\n"
    )
    assert untested(text) == [
        "no test named for: Nothing leaks.",
        "tests/test_mcp_http.py::test_that_was_renamed does not exist (for: Tokens hold.)",
    ]


def test_the_readme_security_model_links_here() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Security model", 1)[1].split("\n## ", 1)[0]
    assert "(docs/security.md)" in section


# What kbes does not promise ---------------------------------------------------------------


def test_next_sequence_is_the_head_of_the_whole_log(store: KnowledgeBaseStore, kb: str) -> None:
    """An agent polling its own knowledge base sees the log head move with writes elsewhere
    (how much is written, not what, nor where)."""
    other = str(store.create_knowledge_base("Elsewhere"))
    poll = {"resource_type": "knowledge_base", "resource_id": kb}
    before = call(store, "poll_resource_events", **poll)["next_sequence"]
    store.add_article(other, "Not yours", "Written in another knowledge base.", publish=True)
    page = call(store, "poll_resource_events", **poll, after_sequence=before)
    assert page["events"] == []
    assert page["next_sequence"] > before
