"""Knowledge-base names follow the title rule (issue 18, defect 11): a newline, ESC, U+202E
and 100,000 characters were accepted, and `kbes kb create $'Evil\\n<uuid>  Payroll'` forged a
row of `kbes kb list`. Now a name is not blank, holds no control or format character and is at
most 300 characters long, at every door that names a knowledge base (the library and
`kbes kb create`); a second knowledge base of an existing name is created with a warning; and
a log written before the rule, holding such a name, still loads and lists it escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbes import KnowledgeBase, KnowledgeBaseStore, call_tool, open_store
from kbes.cli import main
from kbes.domain.errors import InvalidArgument
from kbes.domain.limits import NAME_CHARS

FORGED = "00000000-0000-4000-8000-000000000000"
BAD_NAMES = [
    pytest.param("   ", id="blank"),
    pytest.param(f"Evil\n{FORGED}  Payroll", id="newline"),
    pytest.param("Support\x1b[2J", id="escape"),
    pytest.param("Support \u202eterces", id="rtl-override"),
    pytest.param("Support\u2029Payroll", id="paragraph-separator"),
    pytest.param("x" * 100_000, id="100000-characters"),
    pytest.param("x" * (NAME_CHARS + 1), id="one-over-the-limit"),
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_library_refuses_a_bad_name_and_writes_nothing(
    store: KnowledgeBaseStore, name: str
) -> None:
    head = store.head()
    with pytest.raises(InvalidArgument) as refused:
        store.create_knowledge_base(name)
    assert refused.value.field == "name"
    assert store.head() == head
    assert store.knowledge_bases() == []


@pytest.mark.parametrize("name", BAD_NAMES)
def test_kbes_kb_create_refuses_a_bad_name_and_creates_nothing(
    runner: CliRunner, db_path: Path, name: str
) -> None:
    result = runner.invoke(main, ["kb", "create", name])
    assert result.exit_code == 2, result.output
    assert "Invalid value for 'NAME'" in result.output
    assert FORGED not in result.output.replace(repr(name), "")
    assert not db_path.exists()  # checked before the database is created


def test_the_refusal_names_the_character_and_the_fix(runner: CliRunner) -> None:
    result = runner.invoke(main, ["kb", "create", f"Evil\n{FORGED}  Payroll"])
    assert (
        "the name has the control or format character U+000A (category Cc) at position 4; "
        "knowledge-base names are one line of visible text, so remove it"
    ) in " ".join(result.output.split())
    too_long = runner.invoke(main, ["kb", "create", "x" * 100_000])
    assert "the name is 100000 characters; the limit is 300\n" in too_long.output


@pytest.mark.parametrize(
    "name", ["Réglages — ½", "emoji \U0001f469\u200d\U0001f4bb team", "x" * 300]
)
def test_ordinary_names_pass(store: KnowledgeBaseStore, name: str) -> None:
    kb = store.create_knowledge_base(name)
    store.catch_up()
    found = store.knowledge_base(kb)
    assert found is not None and found.name == name


def test_a_second_knowledge_base_of_a_name_is_created_with_a_warning(
    runner: CliRunner, db_path: Path
) -> None:
    first = runner.invoke(main, ["kb", "create", "Support"])
    assert first.exit_code == 0 and "warning" not in first.output
    second = runner.invoke(main, ["kb", "create", " Support ", "--json"])
    assert second.exit_code == 0, second.output
    created = json.loads(second.stdout)
    assert created["name"] == "Support"
    assert second.stderr.startswith("warning: a knowledge base is already named 'Support' (")
    assert first.stdout.strip() in second.stderr and created["knowledge_base_id"] in second.stderr
    store = open_store(db_path)
    try:
        assert len(store.knowledge_bases_named("Support")) == 2
    finally:
        store.close()


def test_a_log_with_a_name_from_before_the_rule_still_loads(
    runner: CliRunner, db_path: Path
) -> None:
    store = open_store(db_path)
    try:
        # As a kbes before the rule wrote it: the event, without `KnowledgeBase.create`.
        old = KnowledgeBase._create(
            KnowledgeBase.Created, name=f"Evil\n{FORGED}  Payroll", author=None
        )
        store.save(old)
        article = str(store.add_article(old.id, "Refunds", "Refunds take days.", publish=True))
    finally:
        store.close()
    store = open_store(db_path)
    try:
        store.catch_up()
        found = store.knowledge_base(old.id)
        assert found is not None and found.name == f"Evil\n{FORGED}  Payroll"
        read = call_tool(
            store, "read_knowledge_article",
            {"knowledge_base_id": str(old.id), "article_id": article},
        )  # fmt: skip
        assert read.title == "Refunds"
    finally:
        store.close()
    listed = runner.invoke(main, ["kb", "list"])
    assert listed.exit_code == 0, listed.output
    rows = listed.output.splitlines()[2:]
    assert len(rows) == 1 and rows[0].startswith(str(old.id))
    assert "Evil\\n" + FORGED in rows[0]


def test_the_security_page_states_the_name_rule() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "security.md").read_text()
    assert f"no control or format characters, at most {NAME_CHARS} characters" in page
    assert (
        "`tests/test_kb_names.py::test_kbes_kb_create_refuses_a_bad_name_and_creates_nothing`"
        in page
    )
