"""Each refusal is worded once per reader: every fact the domain and the application raise has
exactly one entry in the model's table (`kbes.tools.refusals.REFUSALS`, with its wire code) and
one in the person's (`kbes.cli.refusals.WORDS`), so a new fact without words fails here; and no
tool catches a fact to raise it again in other words."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import kbes
import kbes.domain.errors as facts
import kbes.tools.codes as codes
from kbes.cli.refusals import WORDS
from kbes.domain.errors import DomainError
from kbes.tools.refusals import NOT_ASKED, REFUSALS

FAMILIES = {
    facts.DomainError,
    facts.InvalidArgument,
    facts.NotFound,
    facts.Gone,
    facts.InvalidState,
}
"""Groups of facts a caller handles alike: never raised themselves, so never worded."""

TOOLS = Path(kbes.__file__).parent / "tools"
"""Where a tool call is answered."""


def every_fact() -> set[type[DomainError]]:
    """Every fact class in kbes (its modules imported first, so none is missed)."""
    for module in pkgutil.walk_packages(kbes.__path__, "kbes."):
        if not module.name.startswith(("kbes.sims", "kbes.cli")):
            try:
                importlib.import_module(module.name)
            except ImportError:  # an optional extra that is not installed
                continue
    found: set[type[DomainError]] = set()
    stack: list[type[DomainError]] = [DomainError]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.add(sub)
            stack.append(sub)
    return found - FAMILIES


def test_every_fact_has_the_models_words_and_a_code() -> None:
    every = every_fact()
    assert {f.__name__ for f in every - REFUSALS.keys()} == set()
    assert {f.__name__ for f in REFUSALS.keys() - every} == set()


def test_every_fact_has_the_persons_words() -> None:
    every = every_fact()
    assert {f.__name__ for f in every - WORDS.keys()} == set()
    assert {f.__name__ for f in WORDS.keys() - every} == set()


def test_a_fact_is_worded_by_its_own_entry() -> None:
    article = facts.ArticleUnpublished("A1", "2026-11-30T09:00:00.000000Z")
    wire = REFUSALS[facts.ArticleUnpublished](article, NOT_ASKED)
    assert isinstance(wire, codes.Gone)
    assert wire.to_dict()["unpublished_at"] == "2026-11-30T09:00:00.000000Z"
    assert "A1" in WORDS[facts.ArticleUnpublished](article)
    # No code and no words in the domain: a fact's text only lists its fields.
    assert str(article) == (
        "ArticleUnpublished(article_id='A1', unpublished_at='2026-11-30T09:00:00.000000Z')"
    )
    assert not hasattr(article, "code") and not hasattr(article, "message")


def refusal_names() -> set[str]:
    """The names of every fact and every wire refusal class."""
    wire = {name for name, value in vars(codes).items() if isinstance(value, type)}
    return wire | {name for name, value in vars(facts).items() if isinstance(value, type)}


def test_no_tool_catches_a_refusal_to_reword_it() -> None:
    """The only handler in kbes/tools that turns a refusal into another is `refusing`, the
    one place the table is applied."""
    names = refusal_names()
    rewordings = []
    for path in sorted(TOOLS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) or function.name == "refusing":
                continue
            for handler in ast.walk(function):
                if not isinstance(handler, ast.ExceptHandler) or handler.type is None:
                    continue
                caught = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)}
                raises = [n for n in ast.walk(handler) if isinstance(n, ast.Raise) and n.exc]
                if caught & names and raises:
                    rewordings.append(f"{path.name}:{handler.lineno} {sorted(caught)}")
    assert rewordings == []
