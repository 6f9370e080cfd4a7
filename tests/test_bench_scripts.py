"""The bench scripts' own plumbing: `make bench` keeps the sections other scripts splice into docs/benchmarks.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from run_benchmarks import with_other_sections


def test_a_rerun_replaces_its_sections_and_keeps_the_others():
    old = "# Benchmarks\n\nintro\n\n## Mine\nold numbers\n\n## Spliced by another script\nkept numbers\n"
    new = "# Benchmarks\n\nnew intro\n\n## Mine\nnew numbers\n"
    assert with_other_sections(new, old) == (
        "# Benchmarks\n\nnew intro\n\n## Mine\nnew numbers\n\n## Spliced by another script\nkept numbers\n"
    )
    assert with_other_sections(new, new) == new
