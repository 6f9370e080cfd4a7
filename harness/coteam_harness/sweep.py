"""Sweeps: one YAML file names methods, suites, seeds, team sizes and a grid of switch values; ``coteam sweep``
expands it into one run per combination (a :class:`~coteam_harness.cells.Cell` each), plays them all on one pool
or Ray cluster, and writes one comparison table per suite and team size, with a bar chart each::

    methods: [pce, coela, rhp]          # required
    suites: [cwah-test]                 # required
    episodes: 0-4                       # optional: as --episodes (default: the whole test set, or 0-9 when generated)
    seeds: [0, 1]                       # default [0]: a generated suite's episodes, the simulator's tie-breaks
    agents: [2, 3]                      # default [2]
    switches:                           # optional: every combination; each method takes the switches it declares
      backend: [symbolic]
      K_action: [3, 5]
    reference: pce                      # default: the first method (the first of its settings)

A method that declares none of a combination's switches runs once, not once per combination. A row is a method
with its switches (``pce[K_action=3]``); its episodes are pooled over the seeds, and its paired difference to the
reference is over the (seed, episode) pairs both ran."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from coteam.domain.validation import first_problem, read_yaml
from coteam.domain.world import MAX_AGENTS
from coteam.registry import method_names
from coteam_harness.cells import Cell, run_cells, select_episodes, split_params
from coteam_harness.jobs import RunSettings
from coteam_harness.report import scaling_markdown, write_report
from coteam_harness.results import RESULTS_LOG, EpisodeResult
from coteam_sim.bridges.settings import UnitySettings
from coteam_sim.suites import SUITES, get_suite


class SweepFile(BaseModel):
    """A sweep file (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    methods: list[str] = Field(min_length=1)
    suites: list[str] = Field(min_length=1)
    episodes: str | int | None = None
    seeds: list[int] = Field(default=[0], min_length=1)
    agents: list[int] = Field(default=[2], min_length=1)
    switches: dict[str, list[Any]] = Field(default_factory=dict)
    reference: str | None = None

    @field_validator("methods", "suites", "seeds", "agents")
    @classmethod
    def _no_repeats(cls, values: list[Any]) -> list[Any]:
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"listed twice: {', '.join(repeated)}")
        return values

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in method_names()]
        if unknown:
            raise ValueError(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(method_names())}")
        return names

    @field_validator("suites")
    @classmethod
    def _known_suites(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(sorted(SUITES))}")
        return names

    @field_validator("agents")
    @classmethod
    def _team_sizes(cls, counts: list[int]) -> list[int]:
        if any(not 1 <= n <= MAX_AGENTS for n in counts):
            raise ValueError(f"team sizes must be between 1 and {MAX_AGENTS}")
        return counts

    @field_validator("switches")
    @classmethod
    def _grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        empty = [k for k, values in grid.items() if not values]
        if empty:
            raise ValueError(f"switch(es) {', '.join(empty)} list no value")
        return grid


def load_sweep(path: str | Path) -> SweepFile:
    """A sweep file, validated; a :class:`ValueError` of one line naming the file and what is wrong."""
    data = read_yaml(path)
    try:
        return SweepFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: {first_problem(exc, schema=SweepFile)}") from None


@dataclass(frozen=True)
class Variant:
    """A row of the sweep's tables: a method with its share of one combination of the switch grid."""

    method: str
    switches: tuple[tuple[str, Any], ...]

    @property
    def label(self) -> str:
        if not self.switches:
            return self.method
        return f"{self.method}[{','.join(f'{k}={v}' for k, v in self.switches)}]"

    @property
    def folder(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.=,\[\]-]+", "_", self.label)


def variants(sweep: SweepFile) -> list[Variant]:
    """Every method with every combination of the switches it declares (each validated), without repeats, in the
    file's order."""
    keys = list(sweep.switches)
    out: list[Variant] = []
    for values in itertools.product(*(sweep.switches[k] for k in keys)):
        own = split_params(sweep.methods, dict(zip(keys, values, strict=True)))
        for method in sweep.methods:
            variant = Variant(method, tuple(own[method].items()))
            if variant not in out:
                out.append(variant)
    return sorted(out, key=lambda v: sweep.methods.index(v.method))


def reference_of(sweep: SweepFile, rows: list[Variant]) -> str:
    """The label of the row every other is paired against: the named method (its first setting) or row."""
    wanted = sweep.reference or sweep.methods[0]
    for v in rows:
        if wanted in (v.label, v.method):
            return v.label
    raise ValueError(f"reference {wanted!r} is not a method or row of the sweep ({', '.join(v.label for v in rows)})")


def _keyed_by_seed(results: list[EpisodeResult], seed: int, seeds: int) -> list[EpisodeResult]:
    """With several seeds, each result's episode named with its seed, so rows pair on (seed, episode)."""
    return results if seeds == 1 else [replace(r, episode=f"s{seed}/{r.episode}") for r in results]


def run_sweep(
    sweep: SweepFile,
    out: Path,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    quiet: bool = False,
    resume: bool = False,
    engine: str = "unity",
    unity: UnitySettings | None = None,
) -> dict[str, Any]:
    """Run every cell of ``sweep`` (results in ``out/<suite>/x<agents>/<row>/seed<seed>``) and write its tables:
    ``out/sweep.md`` and ``out/sweep.json``, with a chart per suite and team size next to its table."""
    if not resume and any(out.rglob(RESULTS_LOG)):
        raise ValueError(
            f"{out} holds an earlier sweep's results: add --resume to go on with it, or choose another --out"
        )
    rows = variants(sweep)
    reference = reference_of(sweep, rows)
    cells: list[Cell] = []
    keys: list[tuple[str, int, str, int]] = []
    for suite in sweep.suites:
        for seed in sweep.seeds:
            episodes = str(sweep.episodes) if sweep.episodes is not None else None
            specs = select_episodes(suite, episodes, seed)
            for n in sweep.agents:
                for v in rows:
                    settings = RunSettings(v.method, dict(v.switches), n, seed, engine=engine, unity=unity)
                    folder = out / suite / f"x{n}" / v.folder / f"seed{seed}"
                    cells.append(Cell(specs, settings, folder, v.label))
                    keys.append((suite, n, v.label, seed))
    played = run_cells(
        cells,
        workers=workers,
        ray_address=ray_address,
        quiet=quiet,
        resume=resume,
        title=f"sweep: {len(rows)} row(s) x {len(sweep.suites)} suite(s) x {len(sweep.agents)} size(s) "
        f"x {len(sweep.seeds)} seed(s)",
    )
    pooled: dict[tuple[str, int], dict[str, list[EpisodeResult]]] = {}
    for (suite, n, label, seed), results in zip(keys, played, strict=True):
        group = pooled.setdefault((suite, n), {v.label: [] for v in rows})
        group[label] += _keyed_by_seed(results, seed, len(sweep.seeds))
    sections, tables = [], []
    for suite in sweep.suites:
        benchmark = get_suite(suite).benchmark
        for n in sweep.agents:
            report = write_report(pooled[suite, n], benchmark, f"{suite} x{n}", out / suite / f"x{n}", reference)
            sections.append(Path(report["markdown"]).read_text())
            tables.append({"suite": suite, "agents": n, "rows": report["rows"]})
        if len(sweep.agents) > 1:
            sections.append(scaling_markdown({n: pooled[suite, n] for n in sweep.agents}, benchmark, suite))
    seeds = ", ".join(map(str, sweep.seeds))
    head = f"# Sweep\n\n{len(cells)} runs; seeds {seeds}; rows paired against {reference}.\n\n"
    (out / "sweep.md").write_text(head + "\n".join(sections))
    (out / "sweep.json").write_text(json.dumps({"reference": reference, "tables": tables}, indent=1))
    return {"markdown": out / "sweep.md", "json": out / "sweep.json", "tables": tables}
