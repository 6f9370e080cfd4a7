"""The map matches the house: docs/architecture.md names every module of the four packages and the test kit, the
core's rooms (its top-level modules and sub-packages) import each other in one direction only, no product package
imports the test kit, and the reading docs keep to short paragraphs."""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = {
    "coteam": "src/coteam",
    "coteam_sim": "sim/coteam_sim",
    "coteam_harness": "harness/coteam_harness",
    "coteam_ros": "ros2_ws/src/coteam_ros/coteam_ros",
}
PACKAGES = (*PRODUCT.values(), "testkit/coteam_testkit")


def _tree() -> str:
    """The code blocks of docs/architecture.md before its first section: the tree of the packages, one block each."""
    text = (ROOT / "docs" / "architecture.md").read_text().split("\n## ")[0]
    return "\n".join(re.findall(r"```\n(.*?)```", text, re.S))


def test_the_architecture_map_names_every_module_and_folder() -> None:
    words = set(re.findall(r"[\w.]+/?", _tree()))
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT / package)
            named = path.name == "__init__.py" or path.name in words
            folders = all(f"{folder}/" in words for folder in relative.parts[:-1])
            if not (named and folders):
                missing.append(f"{package}/{relative}")
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"


def test_no_two_rooms_of_the_core_import_each_other() -> None:
    graph = grimp.build_graph("coteam")
    rooms = {m.split(".")[1] for m in graph.modules if m.count(".") >= 1}
    both_ways = [
        (a, b)
        for a in sorted(rooms)
        for b in sorted(rooms)
        if a < b
        and graph.chain_exists(importer=f"coteam.{a}", imported=f"coteam.{b}", as_packages=True)
        and graph.chain_exists(importer=f"coteam.{b}", imported=f"coteam.{a}", as_packages=True)
    ]
    assert not both_ways, f"rooms that import each other (directly or round a loop): {both_ways}"


def test_no_product_package_imports_the_test_kit() -> None:
    graph = grimp.build_graph(*PRODUCT, "coteam_testkit")
    users = sorted(
        m
        for m in graph.find_modules_that_directly_import("coteam_testkit", as_package=True)
        if not m.startswith("coteam_testkit")
    )
    assert not users, f"the product imports the test kit: {users}"


READING = (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
GENERATED = {"benchmarks.md"}  # the bench scripts write its sections
LONGEST_PARAGRAPH = 8  # lines: a reader in a hurry reads a short paragraph


def _paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """The reading paragraphs of a Markdown text, with their first line's number: runs of text lines outside code
    fences, tables and headings; a list item starts a paragraph of its own."""
    found: list[tuple[int, list[str]]] = []
    fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
            found.append((number, []))
        elif fence or not line.strip() or line.startswith(("|", "#")):
            found.append((number, []))
        elif re.match(r"^\s*([-*]|\d+\.)\s", line) or not found or not found[-1][1]:
            found.append((number, [line]))
        else:
            found[-1][1].append(line)
    return [(n, lines) for n, lines in found if lines]


def test_no_reading_paragraph_is_longer_than_eight_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{number} ({len(lines)} lines)"
        for path in READING
        if path.name not in GENERATED
        for number, lines in _paragraphs(path.read_text())
        if len(lines) > LONGEST_PARAGRAPH
    ]
    assert not long, f"paragraphs over {LONGEST_PARAGRAPH} lines: {', '.join(long)}"
