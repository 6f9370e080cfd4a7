"""The house by the numbers: how the core is laid out, the longest node module, the tests and their coverage, and how
long `make test` takes from a clean clone -- measured on the tree as it is, one row per measurement.

    python bench/structure.py --label before              # layout and tests (a minute)
    python bench/structure.py --label before --coverage   # and the coverage of the tests that run in process
    python bench/structure.py --label before --clean-clone  # and `make test` timed in a fresh clone (build included)
    python bench/structure.py --out docs/benchmarks.md    # the table of every row measured so far

Layout, from grimp's import graph of ``coteam``: the core's top-level modules and sub-packages ("rooms"), its import
arrows between modules, the arrows between rooms, and the circles between rooms (rooms that import each other,
directly or round a loop). Tests: collected by pytest, and those marked ``team`` (a team of ROS 2 processes).
Coverage: line coverage of coteam, coteam_sim, coteam_harness and coteam_ros by the tests not marked ``team`` (the node
processes a team test starts are not measured). Each row is kept in bench/results/structure.json under its label and
commit; the section is the table of them all.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "structure.json"
TITLE = "## The house by the numbers"
NODES = ROOT / "ros2_ws" / "src" / "coteam_ros" / "coteam_ros" / "nodes"
COVERED = ("coteam", "coteam_sim", "coteam_harness", "coteam_ros")


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(package)"


def _circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one room (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(arrows.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(set(arrows) | {w for ws in arrows.values() for w in ws}):
        if v not in index:
            visit(v)
    return sorted(groups)


def layout() -> dict:
    import grimp

    graph = grimp.build_graph("coteam")
    modules = sorted(m for m in graph.modules if m == "coteam" or m.startswith("coteam."))
    core = ROOT / "src" / "coteam"
    top = sorted(p.stem for p in core.glob("*.py") if p.stem != "__init__")
    packages = sorted(p.name for p in core.iterdir() if (p / "__init__.py").exists())
    arrows = 0
    between: dict[str, set[str]] = defaultdict(set)
    for m in modules:
        for imported in graph.find_modules_directly_imported_by(m):
            if imported in modules:
                arrows += 1
                if _room(imported) != _room(m) and _room(m) != "(package)":
                    between[_room(m)].add(_room(imported))
    nodes = {p.name: len(p.read_text().splitlines()) for p in NODES.glob("*.py") if p.name != "__init__.py"}
    longest = max(nodes, key=nodes.__getitem__)
    return {
        "top_level_modules": len(top),
        "packages": len(packages),
        "modules": len(modules),
        "arrows": arrows,
        "room_arrows": sum(len(v) for v in between.values()),
        "circles": _circles(between),
        "longest_node": f"{longest} ({nodes[longest]} lines)",
    }


def _collected(*marker: str) -> int:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *marker],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", out)
    if found is None:
        raise RuntimeError(f"pytest did not say how many tests it collected: {out[-300:]}")
    return int(found.group(1))


def tests() -> dict:
    return {"tests": _collected(), "team_tests": _collected("-m", "team")}


def coverage() -> float:
    """Line coverage (%) by the tests not marked ``team``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "coverage.json"
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "2", "-m", "not team", "-p", "no:cacheprovider"]
            + [f"--cov={p}" for p in COVERED]
            + [f"--cov-report=json:{report}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if not report.exists():
            raise RuntimeError(f"the tests under coverage did not finish: {run.stdout[-2000:]}")
        if run.returncode != 0:  # a test that fails under coverage still leaves its lines counted
            print(f"some tests failed under coverage: {run.stdout.strip().splitlines()[-1]}", file=sys.stderr)
        return round(json.loads(report.read_text())["totals"]["percent_covered"], 1)


def clean_clone_minutes() -> tuple[float, bool]:
    """`make test` in a fresh clone of HEAD, build included: its minutes, and whether every test passed. Both of
    its passes run to their end even when the first has a failing test (``make -i``: a failure in the first would
    otherwise leave the second, the longer, out of the time)."""
    with tempfile.TemporaryDirectory(prefix="coteam-clone-") as tmp:
        clone = Path(tmp) / "coteam"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        start = time.monotonic()
        run = subprocess.run(["make", "-i", "test"], cwd=clone, capture_output=True, text=True)
        summaries = [line for line in run.stdout.splitlines() if re.search(r"\d+ (passed|failed|errors?)\b", line)]
        passed = len(summaries) == 2 and not any(re.search(r"\d+ (failed|errors?)\b", s) for s in summaries)
        if not passed:
            said = summaries or run.stdout.strip().splitlines()[-3:]
            print(f"make test failed in the clone: {said}", file=sys.stderr)
        return round((time.monotonic() - start) / 60, 1), passed


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return head.stdout.strip()


def section(rows: dict[str, dict], command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Produced by `{command}` (each row by `python bench/structure.py --label LABEL [--coverage] "
        "[--clean-clone]` on the commit it names, this script copied into a checkout of an older one; "
        "bench/results/structure.json keeps them).",
        "",
        "| row | commit | core: top-level modules / packages | core modules | import arrows | arrows between "
        "rooms | circles between rooms | longest node module | tests (team) | coverage, in process | "
        "`make test`, clean clone |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        circles = "; ".join(" <-> ".join(c) for c in r["circles"]) or "none"
        cov = f"{r['coverage']:.1f}%" if r.get("coverage") is not None else "-"
        minutes = "-"
        if r.get("make_test_min") is not None:
            minutes = f"{r['make_test_min']:.1f} min" + ("" if r.get("make_test_passed") else " (a test failed)")
        lines.append(
            f"| {label} | {r['commit']} | {r['top_level_modules']} / {r['packages']} | {r['modules']} | "
            f"{r['arrows']} | {r['room_arrows']} | {circles} | {r['longest_node']} | {r['tests']} "
            f"({r['team_tests']}) | {cov} | {minutes} |"
        )
    before, after = rows.get("before"), rows.get("after")
    if before and after:
        said = (
            f"After the change the core has {after['top_level_modules']} top-level modules in "
            f"{after['packages']} packages (before: {before['top_level_modules']} in {before['packages']}), "
            f"{after['room_arrows']} arrows between rooms against {before['room_arrows']}, and "
            f"{len(after['circles'])} circles between rooms against {len(before['circles'])}; "
            f"{after['tests']} tests against {before['tests']}"
        )
        if after.get("coverage") is not None and before.get("coverage") is not None:
            said += f", covering {after['coverage']:.1f}% of the lines against {before['coverage']:.1f}%"
        if after.get("make_test_min") is not None and before.get("make_test_min") is not None:
            said += f"; `make test` took {after['make_test_min']:.1f} min against {before['make_test_min']:.1f}"
        lines += ["", said + "."]
    lines += [
        "",
        "How to read it. A room is a top-level module or sub-package of `src/coteam`; an arrow is one module importing "
        "another; a circle is a set of rooms that import each other. Coverage counts the lines the tests run in "
        "their own processes, not in the ROS node processes a team test starts.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", help="measure the tree now and keep the row under this label")
    parser.add_argument("--coverage", action="store_true", help="also measure coverage (about 6 minutes)")
    parser.add_argument("--clean-clone", action="store_true", help="also time `make test` in a fresh clone")
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    args = parser.parse_args(argv)
    rows = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.label:
        earlier = rows.get(args.label, {})
        row = {"commit": commit(), **layout(), **tests()}
        same = earlier.get("commit") == row["commit"]  # what was measured on this commit still holds
        row["coverage"] = coverage() if args.coverage else earlier.get("coverage") if same else None
        if args.clean_clone:
            row["make_test_min"], row["make_test_passed"] = clean_clone_minutes()
        else:
            row["make_test_min"] = earlier.get("make_test_min") if same else None
            row["make_test_passed"] = earlier.get("make_test_passed") if same else None
        rows[args.label] = row
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sections import emit_section

    command = "python bench/structure.py" + (f" --out {args.out}" if args.out else "")
    emit_section(args.out, section(rows, command), TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
