"""The layout docs/architecture.md describes, held by tests rather than by review: which
folder may import what, and a built wheel that carries the four source folders inside the one
`kbes` namespace (so no top-level `cli` or `sims` module lands in a user's site-packages)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kbes

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "kbes": "kbes",
    "projections": "kbes.projections",
    "cli": "kbes.cli",
    "sims": "kbes.sims",
}


def sources(folder: str) -> list[Path]:
    """Every Python file of a source folder, its subpackages' included."""
    return sorted((ROOT / folder).rglob("*.py"))


def package_of(folder: str, path: Path) -> str:
    """The dotted package a file of `folder` is installed in (`sims/bench/x.py`:
    kbes.sims.bench)."""
    return ".".join([FOLDERS[folder], *path.relative_to(ROOT / folder).parent.parts])


def imports(folder: str) -> list[tuple[str, str, str]]:
    """(file, module, name) for every import in a source folder, `name` empty for `import m`;
    relative imports resolved to the file's package."""
    found = []
    for path in sources(folder):
        file = path.relative_to(ROOT / folder).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(file, alias.name, "") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    package = package_of(folder, path).split(".")
                    base = package[: len(package) - node.level + 1]
                    module = ".".join([*base, module]).rstrip(".")
                found += [(file, module, alias.name) for alias in node.names]
    return found


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("folder", ["kbes", "projections", "sims"])
def test_nothing_imports_the_cli(folder: str) -> None:
    assert imports(folder), f"no imports read from {folder}/"
    assert [i for i in imports(folder) if within(i[1], "kbes.cli")] == []


def test_projections_import_the_domain_not_the_application_or_its_callers() -> None:
    allowed = (
        "kbes.article",
        "kbes.clock",
        "kbes.errors",  # the domain's errors (a rebuild overtaken by another is `busy`)
        "kbes.knowledge_base",
        "kbes.projections",
        # Leaf modules, which import nothing of kbes: the log's read interface, and the one
        # module on eventsourcing's private names (tracking rows in the views' transaction).
        "kbes.feed",
        "kbes.internals",
    )
    own = [i for i in imports("projections") if within(i[1], "kbes")]
    assert own, "the projections fold kbes's domain events"
    assert [i for i in own if not any(within(i[1], a) for a in allowed)] == []
    assert [i for i in imports("projections") if within(i[1], "mcp")] == []


def test_the_domain_reaches_the_projections_only_through_the_application_wiring() -> None:
    users = {file for file, module, _ in imports("kbes") if within(module, "kbes.projections")}
    assert users == {"application.py"}


def test_the_application_knows_nothing_of_the_agent_contract() -> None:
    """The application speaks in domain terms: no wire types, no tools, no MCP; the agent
    contract (kbes/tools/) sits above it and phrases its answers for models."""
    own = [i for i in imports("kbes") if i[0] == "application.py"]
    assert own, "the application imports the domain"
    assert [i for i in own if within(i[1], "kbes.tools") or within(i[1], "mcp")] == []
    contract = [i for i in imports("kbes") if i[0].startswith("tools/")]
    assert contract, "kbes/tools/ holds the agent contract"
    assert [i for i in contract if within(i[1], "mcp") or within(i[1], "kbes.server")] == []


def test_the_simulations_use_the_public_api_only() -> None:
    """`sims/` drives the same tool layer the MCP server serves: `from kbes import ...` of the
    names kbes exports, and its own modules; never the application's or the views' insides."""
    assert any(module == "kbes" for _, module, _ in imports("sims"))
    stray = [
        (file, module, name)
        for file, module, name in imports("sims")
        if within(module, "kbes")
        and not within(module, "kbes.sims")
        and not (module == "kbes" and name in kbes.__all__)
    ]
    assert stray == []


def test_a_built_wheel_holds_every_source_file_under_the_kbes_namespace(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "*.sqlite*"
        ),
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0 and "No matching distribution found for setuptools" in built.stderr:
        pytest.skip(
            "building the wheel needs setuptools >= 68 from a package index, and none answered "
            "(pip install works the same way)"
        )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("kbes-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"{package_of(folder, path).replace('.', '/')}/{path.name}"
        for folder in FOLDERS
        for path in sources(folder)
    }
    assert expected - names == set()
    assert {name.split("/")[0] for name in names} == {
        "kbes",
        wheel.name.split("-py")[0] + ".dist-info",
    }
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "kbes = kbes.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
