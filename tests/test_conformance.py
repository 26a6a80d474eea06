"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/conformance/package.json with the Node it needs) against a real `kbes serve --http`: the
latest release (0.1.16, every suite) and the newest 0.2 pre-release (the requirements of both
protocol revisions kbes serves).

Each run must fail exactly the checks its expected-failures file in tests/conformance/ lists,
each listed with its reason: a scenario that drives the suite's own test tools, prompts or
resources, a capability kbes does not declare (checked here against what kbes declares), or a
report in docs/upstream/. Every other check passes, so every scenario for a capability kbes
declares passes unless it needs a fixture kbes cannot have.

The suite and Node are installed with `npm ci` once into a cache (`$KBES_TEST_CACHE`, else
`$XDG_CACHE_HOME/kbes-tests`, else `~/.cache/kbes-tests`), keyed by the lockfile; after that a
run needs no network. The test skips only where npm cannot reach its registry."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import http_client, http_server, seed

ROOT = Path(__file__).resolve().parent.parent
SUITE = Path(__file__).resolve().parent / "conformance"
PASSING = {"SUCCESS", "SKIPPED", "INFO"}
"""Check statuses that are no failure. A WARNING (a SHOULD unmet) counts as one, as in the
suite's own baseline mode."""

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Run:
    package: str
    """The alias of the suite's version in package.json."""
    version: str
    args: tuple[str, ...]
    expected: str
    """The expected-failures file in tests/conformance/."""

    def __str__(self) -> str:
        return f"{self.version} {' '.join(self.args)}"


RUNS = [
    Run("conformance-0.1", "0.1.16", ("--suite", "all"), "expected-0.1.16.yml"),
    Run(
        "conformance-0.2",
        "0.2.0-alpha.12",
        ("--requirements", "2026-07-28"),
        "expected-0.2.0-alpha.12-2026-07-28.yml",
    ),
    Run(
        "conformance-0.2",
        "0.2.0-alpha.12",
        ("--requirements", "2025-11-25"),
        "expected-0.2.0-alpha.12-2025-11-25.yml",
    ),
]


# Installing the suite, once ----------------------------------------------------------------


def cache_root() -> Path:
    if os.environ.get("KBES_TEST_CACHE"):
        return Path(os.environ["KBES_TEST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbes-tests"


def npm(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["npm", *args, "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def install() -> Path:
    """The installed node_modules for the pinned lockfile, installed now if not cached."""
    lock = (SUITE / "package-lock.json").read_bytes()
    home = cache_root() / f"conformance-{hashlib.sha256(lock).hexdigest()[:16]}"
    if (home / "installed").exists():
        return home / "node_modules"
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed, so the MCP conformance suite cannot be fetched")
    home.parent.mkdir(parents=True, exist_ok=True)
    try:
        reached = npm("ping", cwd=home.parent, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("npm cannot reach its registry (npm ping timed out)")
    if reached.returncode != 0:
        pytest.skip(f"npm cannot reach its registry: {reached.stderr.strip()[-300:]}")
    building = home.with_name(f"{home.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(SUITE / name, building / name)
    done = npm("ci", cwd=building, timeout=600)
    assert done.returncode == 0, f"npm ci of tests/conformance failed:\n{done.stderr[-3000:]}"
    (building / "installed").touch()
    try:
        building.rename(home)
    except OSError:  # another run installed it meanwhile
        shutil.rmtree(building, ignore_errors=True)
    return home / "node_modules"


@pytest.fixture(scope="module")
def modules() -> Path:
    found = install()
    node = found / "node" / "bin" / "node"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    assert int(version.stdout.strip().lstrip("v").split(".")[0]) >= 22, version.stdout
    return found


# The server under test ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[str, dict[str, Any]]]:
    """`kbes serve --http --grant-all` on a seeded database, and the capabilities it declares
    on either protocol era (the same: tests/test_mcp_capabilities.py)."""
    data = seed(tmp_path_factory.mktemp("conformance") / "kbes.sqlite")
    # The runner is one client (one address) that opens a session per scenario and ends none,
    # past the default --max-sessions-per-client; this test checks the protocol, and
    # tests/test_http_sessions.py the limit.
    with http_server(data.db, "--grant-all", "--max-sessions-per-client", "1000") as server:

        async def declared() -> dict[str, Any]:
            async with http_client(server.url, mode="auto") as client:
                assert client.server_capabilities is not None
                return client.server_capabilities.model_dump(by_alias=True, exclude_none=True)

        yield server.url, anyio.run(declared)


# Expected failures ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    entry: str
    """`scenario` (every failing check of it) or `scenario:check-id`."""
    reason: str


def expected_failures(path: Path) -> list[Expected]:
    """The entries of a baseline file (the suite's YAML: `server:` then `- entry` lines), each
    with the comment block above its group as its reason."""
    entries: list[Expected] = []
    reason: list[str] = []
    in_server = after_entry = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if line == "server:":
            in_server = True
        elif not in_server or not text:
            continue
        elif text.startswith("#"):
            if after_entry:
                reason, after_entry = [], False
            reason.append(text.lstrip("#").strip())
        elif text.startswith("- "):
            assert reason, f"{path.name}:{number}: an entry with no reason above it"
            entries.append(Expected(text[2:].strip(), " ".join(reason)))
            after_entry = True
        else:
            raise AssertionError(f"{path.name}:{number}: not a baseline line: {line!r}")
    assert entries, path
    return entries


def covers(entry: str, scenario: str, check: str) -> bool:
    return entry in (scenario, f"{scenario}:{check}")


def check_reason(expected: Expected, declared: dict[str, Any]) -> None:
    """A reason is a fixture, an undeclared capability (truly undeclared) or an upstream
    report (that exists)."""
    reason = expected.reason
    if reason.startswith("not declared: "):
        capability = reason.removeprefix("not declared: ").split(".")[0].split()[0]
        assert capability not in declared, f"{expected.entry}: kbes declares {capability}"
    elif reason.startswith("upstream: "):
        reports = re.findall(r"docs/upstream/[\w.-]+\.md", reason)
        assert reports, f"{expected.entry}: an upstream reason names its report"
        for report in reports:
            assert (ROOT / report).exists(), f"{expected.entry}: no {report}"
    else:
        assert reason.startswith("fixture: "), f"{expected.entry}: no kind of reason: {reason}"


# Running the suite -------------------------------------------------------------------------


def results(output: Path) -> dict[str, list[dict[str, Any]]]:
    """Scenario -> its checks, from the suite's `-o` folder (one `checks.json` per scenario)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(output.glob("server-*/checks.json")):
        match = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", checks.parent.name)
        assert match, checks
        found[match.group(1)] = json.loads(checks.read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize("run", RUNS, ids=str)
def test_the_conformance_suite_fails_only_what_kbes_cannot_offer(
    run: Run, modules: Path, served: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, declared = served
    expected = expected_failures(SUITE / run.expected)
    for entry in expected:
        check_reason(entry, declared)

    entry_point = modules / run.package / "dist" / "index.js"
    node = modules / "node" / "bin" / "node"
    output = tmp_path / "out"
    baseline = SUITE / run.expected
    done = subprocess.run(
        [node, entry_point, "server", "--url", url, "-o", output, *run.args,
         "--expected-failures", baseline],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    scenarios = results(output)
    assert len(scenarios) > 20, f"the suite ran too little:\n{done.stdout[-3000:]}"

    failing = [
        (scenario, check)
        for scenario, checks in scenarios.items()
        for check in checks
        if check["status"] not in PASSING
    ]
    unexpected = [
        f"{scenario}:{check['id']} {check['status']}: {check.get('errorMessage')}"
        for scenario, check in failing
        if not any(covers(e.entry, scenario, check["id"]) for e in expected)
    ]
    stale = [
        e.entry
        for e in expected
        if not any(covers(e.entry, scenario, check["id"]) for scenario, check in failing)
    ]
    assert unexpected == [], f"{run}: checks that fail and are not expected to"
    assert stale == [], f"{run}: expected failures that no longer fail (remove them)"
    # The suite agrees: read as its baseline, the same file accounts for every failure.
    assert done.returncode == 0, done.stdout[-3000:]
