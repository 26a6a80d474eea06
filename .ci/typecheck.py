"""Run mypy over kbes's folders under the module names the installed package gives them.

The wheel maps projections/, cli/ and sims/ into the `kbes` namespace
(`[tool.setuptools.package-dir]`); the editable install does it with an import hook, which mypy
cannot follow, and mypy has no setting for such a map. So this script names each source file
by the map in pyproject.toml and hands mypy the list; everything else (flags, strictness, the
files to check) comes from `[tool.mypy]`, and arguments pass through to mypy. Files given on
the command line are checked with the whole package, which they import.

    python .ci/typecheck.py                       # what CI runs
    python .ci/typecheck.py tests/test_tools.py   # one test file, and the package
"""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path

from mypy import util
from mypy.find_sources import create_source_list
from mypy.fscache import FileSystemCache
from mypy.main import process_options, run_build
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def package_dirs() -> dict[Path, str]:
    """Each mapped folder, longest first, with the package name it is installed as."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping = pyproject["tool"]["setuptools"]["package-dir"]
    folders = {(ROOT / folder).resolve(): package for package, folder in mapping.items()}
    return dict(sorted(folders.items(), key=lambda item: -len(item[0].parts)))


def installed_name(source: BuildSource, folders: dict[Path, str]) -> BuildSource:
    """The source under the module name it has once installed (unchanged outside the map)."""
    if source.path is None:
        return source
    path = Path(source.path).resolve()
    for folder, package in folders.items():
        if path.is_relative_to(folder):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            module = ".".join([package, *parts])
            return BuildSource(source.path, module, None, source.base_dir)
    return source


def main(args: list[str]) -> int:
    started = time.time()
    fscache = FileSystemCache()
    sources, options = process_options(args, fscache=fscache)
    folders = package_dirs()
    package = create_source_list([str(folder) for folder in folders], options, fscache)
    by_path = {Path(s.path).resolve(): s for s in [*package, *sources] if s.path}
    named = [s for s in sources if not s.path]  # -m, -p and -c targets, as mypy finds them
    sources = [*named, *(installed_name(source, folders) for source in by_path.values())]
    _, messages, blockers = run_build(sources, options, fscache, started, sys.stdout, sys.stderr)
    formatter = util.FancyFormatter(sys.stdout, sys.stderr, options.hide_error_codes)
    n_errors, _, n_files = util.count_stats(messages)
    if n_errors:
        summary = formatter.format_error(
            n_errors, n_files, len(sources), blockers=blockers, use_color=options.color_output
        )
        print(summary)
        return 2 if blockers else 1
    print(formatter.format_success(len(sources), options.color_output))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
