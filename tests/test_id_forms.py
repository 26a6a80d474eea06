"""What spellings of an id name a knowledge base (issue 18, defect 12). docs/security.md said
braced, upper-case and `urn:uuid:` ids named none, while the code read them all, and much more
(`uuid.UUID` also reads `{{KB}}`, `uuid:KB`, hyphens anywhere and non-ASCII digits). Now the
code and the page say one thing: five spellings (`kbes.domain.ids.ID_FORMS`) name what the
canonical id names, within the grants, through the tools, resource URIs and the CLI; every
other disguise names nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tool_calls import call, fails

from kbes import KbesError, KnowledgeBaseStore, call_tool, open_store
from kbes.cli import main
from kbes.domain.ids import ID_FORMS
from kbes.server.resources import article_uri, read_resource

ROOT = Path(__file__).resolve().parent.parent


def spellings(value: str) -> dict[str, str]:
    """The five spellings `ID_FORMS` names, of a canonical id."""
    forms = {
        "canonical": value,
        "upper case": value.upper(),
        "32 hex digits": value.replace("-", ""),
        "braced": f"{{{value}}}",
        "urn:uuid:": f"urn:uuid:{value}",
    }
    assert tuple(forms) == ID_FORMS
    return forms


def disguises(value: str) -> dict[str, str]:
    """Spellings `uuid.UUID` reads as well, which name nothing here."""
    return {
        "padded": f" {value} ",
        "doubled braces": f"{{{{{value}}}}}",
        "one brace": f"{{{value}",
        "uuid: prefix": f"uuid:{value}",
        "doubled urn": f"urn:urn:uuid:{value}",
        "urn and braces": f"urn:uuid:{{{value}}}",
        "hyphen moved": value[:9] + value[10] + "-" + value[11:],
        "arabic-indic digits": value.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
    }


@pytest.fixture
def ids(store: KnowledgeBaseStore, kb: str) -> dict[str, str]:
    article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
    other = str(store.create_knowledge_base("Internal"))
    return {"kb": kb, "article": article, "other": other}


def test_each_spelling_reads_the_same_knowledge_base_through_the_tools(
    store: KnowledgeBaseStore, ids: dict[str, str]
) -> None:
    grants = frozenset({ids["kb"]})
    canonical = call(store, "read_knowledge_article", knowledge_base_id=ids["kb"],
                     article_id=ids["article"])  # fmt: skip
    for form, kb in spellings(ids["kb"]).items():
        for article in spellings(ids["article"]).values():
            read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
            assert {**read, "knowledge_base_id": ids["kb"]} == canonical, form
            assert read["citation"] == canonical["citation"]  # canonical ids, whatever was sent
        hits = call(store, "search_knowledge_base", knowledge_base_id=kb, query="refunds")
        assert [hit["article_id"] for hit in hits["hits"]] == [ids["article"]], form
    # Within the grants: a spelling of an ungranted knowledge base is refused like any unknown.
    for form, other in spellings(ids["other"]).items():
        with pytest.raises(KbesError) as refused:
            call_tool(store, "search_knowledge_base",
                      {"knowledge_base_id": other, "query": "refunds"}, grants)  # fmt: skip
        assert refused.value.code == "not_found", form


def test_a_disguised_id_names_nothing_through_the_tools(
    store: KnowledgeBaseStore, ids: dict[str, str]
) -> None:
    for form, kb in disguises(ids["kb"]).items():
        refused = fails(store, "search_knowledge_base", knowledge_base_id=kb, query="refunds")
        assert refused["code"] == "not_found", form
    for form, article in disguises(ids["article"]).items():
        refused = fails(store, "read_knowledge_article", knowledge_base_id=ids["kb"],
                        article_id=article)  # fmt: skip
        assert refused["code"] == "not_found", form


def test_resource_uris_read_the_same_spellings_and_refuse_the_others(
    store: KnowledgeBaseStore, ids: dict[str, str]
) -> None:
    grants = frozenset({ids["kb"]})
    current = read_resource(store, article_uri(ids["kb"], ids["article"]), grants)
    for form, kb in spellings(ids["kb"]).items():
        read = read_resource(store, article_uri(kb, spellings(ids["article"])[form]), grants)
        assert (read.text, read.meta) == (current.text, current.meta), form
    for form, kb in disguises(ids["kb"]).items():
        with pytest.raises(KbesError) as refused:
            read_resource(store, article_uri(kb, ids["article"]), grants)
        assert refused.value.code in ("not_found", "invalid_argument"), form


def test_the_cli_reads_the_same_spellings_and_refuses_the_others(
    runner: CliRunner, db_path: Path
) -> None:
    store = open_store(db_path)
    try:
        kb = str(store.create_knowledge_base("Support"))
        article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
    finally:
        store.close()
    for form, spelled in spellings(kb).items():
        listed = runner.invoke(main, ["article", "list", "--kb", spelled, "--json"])
        assert listed.exit_code == 0, (form, listed.output)
        assert [row["article_id"] for row in json.loads(listed.output)] == [article]
    for form, spelled in disguises(kb).items():
        refused = runner.invoke(main, ["article", "list", "--kb", spelled, "--json"])
        assert refused.exit_code != 0, (form, refused.output)


def test_the_security_page_says_which_spellings_name_a_knowledge_base() -> None:
    page = " ".join((ROOT / "docs" / "security.md").read_text(encoding="utf-8").split())
    assert "in five spellings: canonical, upper case, 32 hex digits, braced" in page
    assert "`tests/test_id_forms.py::test_a_disguised_id_names_nothing_through_the_tools`" in page
