"""Where the symbolic planner stands against the MCTS baseline and the oracle: the figures of the symbolic-planner
issue, on the test sets and on fresh episodes of a seed that is never used for tuning.

    python bench/symbolic_planner.py --out docs/benchmarks.md   # (make bench runs it too)

Tuning happens on the generators' seeds 101-110, TDW-MAT also 111-130 (`coteam run --suite cwah --seed 101 ...`);
the held-out fresh episodes use seed 2026, and the test sets cwah-test / tdwmat-test are only measured. Re-running
replaces the section of the same title in the markdown file.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coteam.kit import TeamWrapper
from coteam.registry import make_team
from coteam.world import Benchmark
from coteam_harness.results import EpisodeResult, summarize
from coteam_harness.runner import run_episode
from coteam_sim.suites import EpisodeSpec, fresh_episode, get_suite
from timing import latency_table

TITLE = "## Symbolic planner against the MCTS baseline and the oracle"
HELD_OUT_SEED = 2026  # fresh episodes never used for tuning
TUNING_SEEDS = "101-110 (TDW-MAT also 111-130)"
TUNING_REPORTED = (101, 102, 103, 104)  # tuning seeds whose episodes are reported too (not a test of generalisation)
TUNED = "101-104"
ABLATIONS = ("none", "no_planner", "no_composer", "no_evaluator", "physical_only", "communication_only")


READING = [
    "How to read the tables. 'pce - mhp' is the mean difference with its standard error, episode by episode (the "
    "same scenes). C-WAH: the value model (docs/architecture.md) is ahead of mhp on the episodes it was tuned on "
    "and on the held-out seed at every team size (by 14 steps, over two standard errors, with 3 and 4 robots), not "
    "on the ten cwah-test episodes, where mhp's lead is within 1.4 standard errors at every team size: one C-WAH "
    "episode's steps vary by tens between near-identical planners (a missed container costs a walk back), so ten "
    "episodes do not separate planners a few percent apart. The 1.25 x oracle target is met on the held-out seed "
    "with 3 and 4 robots (1.24, 1.21), not with 1 or 2 robots nor on cwah-test. TDW-MAT: pce is ahead of mhp "
    "everywhere since G and C share one scale (the old scale clipped G at 1 for a robot with a loaded carrier, and "
    "robots carried full baskets to the horizon: tdwmat seeds 105-110 went from 0.703 to 0.807, the oracle there "
    "makes 0.836) and since a grab of an item a teammate takes first costs its walk in the rollouts (it cost "
    "nothing, so it tied with whatever the robot's next action was worth: +0.02 on seeds 101-116). The grab skill "
    "also walks into the item's room now: a robot that stopped within reach behind a wall could not see that a "
    "teammate had moved the item, and grasped at it every step (40 failed grasps in one tuning episode). Two later "
    "changes of 24 November: in the rollouts a robot delivers what it holds once the time left is down to its trip "
    "to the bed plus one action (the rules' fixed 700 frames before the end came too late from a far room, and a "
    "robot still out there at the end delivers nothing: +0.011 ± 0.006 on seeds 101-130, 360 episodes), and the "
    "grab skill stops walking as soon as it sees the item in a teammate's hands (failed grasps' walks: 48 to 30 "
    "actions per episode on seeds 103, 111, 116; neutral on the rate, and mhp's rate moves with it). A third: every"
    " option's rollout assumes the robot follows the default policy after it, so among options within 0.02 of the "
    "best utility (C-WAH: exact ties only, its team times are whole steps) the one that policy would take itself "
    "ranks first, where the option's text used to decide (a robot that valued 'the item, then the basket' like 'the"
    " basket, then the item' took the item, and with both hands full never took the basket): +0.010 on tdwmat seeds"
    " 101-130 (360 episodes; margins 0.01 / 0.03 / 0.04: +0.005 / +0.009 / +0.008 and 0.08: -0.012 on 101-116) and "
    "-0.5 steps on cwah 101-110 (a margin of 0.02 there, about 16 steps, lost 8.9). The 0.85 target is now met on "
    "tdwmat-test and on the tuning seeds, not on seed 2026's two floor plans, where even the oracle makes 0.879 and"
    " pce seeing the whole world 0.929 (it beats the oracle's central plan on every TDW-MAT set when it sees all): "
    "the 0.14 it loses there is searching two large houses. What is left there is search and trips: before those "
    "changes, on seeds 111-116 (24 episodes, 0.892 against the oracle's 0.929) the 26 units pce leaves undelivered "
    "are 17 seen but not fetched in time, 6 never seen and 3 held at the end (the oracle's 17: 2 seen, 15 held or "
    "in a carrier); pce's robots take their first carrier at frame 250 on average, the oracle's at 130, and 10 of "
    "45 robots that saw a carrier never took one. Modelling the carriers nobody has seen yet (a house holds 2 or 5,"
    " placed by the priors, found by looking around) did not help: -0.038 ± 0.026 on those 24 episodes. The "
    "ablations: in symbolic mode the Planner's candidate does not steer the symbolic Composer, so no_planner equals"
    " the full method; the Composer's leaves are the value model's best actions per scenario and yield to the "
    "unconditional best within TIE_MARGIN, so no_composer (the best 2^D actions scored side by side on the whole "
    "belief) is within noise of it; no_evaluator (the most likely leaf, unscored) is clearly worse, as in the "
    "paper's Table 3. physical_only and communication_only match the full method because a message is sent only "
    "when announcing my next action changes a teammate's choice, which happens about once in ten C-WAH episodes; "
    "the paper's gap comes from status messages, and on the tuning seeds sending the status whenever there was news"
    " did not shorten episodes (80.6 steps without, 81.3 with, 200 episodes, paired standard error 0.8).",
    "",
    "Where the C-WAH gap to the oracle is, and what was tried to close it (tuning seeds 101-105): docs/experiments.md.",
    "",
    "Time per decision: the p95 is over every decision of the suite. It depends on the machine and how busy it is: "
    "the same planner measured 28.9 ms (C-WAH) and 44.3 ms (TDW-MAT) on an earlier, quieter day and 60.2 / 67.9 ms "
    "on a busy afternoon; this run's machine is faster (the whole section takes about 5 minutes). A TDW-MAT "
    "episode's early decisions are the slowest: they weigh a dozen options over 16 particles before anything is "
    "known.",
]


class SeeingAll(TeamWrapper):
    """A team the simulator shows the whole world, as it shows the oracle: the same planner without searching."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        self.full_observability = True


def _run(
    specs: list[EpisodeSpec], method: str, agents: int, params: dict | None = None, *, see_all: bool = False
) -> list[EpisodeResult]:
    team = SeeingAll(make_team(method, params)) if see_all else make_team(method, params)
    return [run_episode(s.build(), team, n_agents=agents, episode_name=s.name) for s in specs]


def _steps(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.steps for r in rs)


def _rate(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.transport_rate for r in rs)


@dataclass(frozen=True)
class Comparison:
    """pce, mhp and the oracle on the same episodes."""

    pce: float
    mhp: float
    oracle: float
    difference_se: float  # standard error of pce - mhp, episode by episode
    pce_messages: float  # per episode
    pce_seeing_all: float  # pce when the simulator shows it the whole world, as it shows the oracle


def _compare(specs: list[EpisodeSpec], agents: int, metric: Callable[[list[EpisodeResult]], float]) -> Comparison:
    """``metric`` of pce, mhp and the oracle on ``specs``, the standard error of pce - mhp over the episodes (the
    same scenes, so paired), pce's messages per episode, and pce's ``metric`` when it sees the whole world."""
    runs = {m: _run(specs, m, agents) for m in ("pce", "mhp", "oracle")}
    differences = [metric([a]) - metric([b]) for a, b in zip(runs["pce"], runs["mhp"], strict=True)]
    se = statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else math.nan
    seeing_all = metric(_run(specs, "pce", agents, see_all=True))
    return Comparison(
        metric(runs["pce"]),
        metric(runs["mhp"]),
        metric(runs["oracle"]),
        se,
        summarize(runs["pce"])["messages"],
        seeing_all,
    )


def section(command: str) -> str:
    cwah_test = get_suite("cwah-test").episodes()
    tdw_test = get_suite("tdwmat-test").episodes()
    cwah_fresh = [fresh_episode(Benchmark.CWAH, HELD_OUT_SEED, i) for i in range(20)]
    tdw_fresh = [fresh_episode(Benchmark.TDWMAT, HELD_OUT_SEED, i) for i in range(24)]
    cwah_tuning = [fresh_episode(Benchmark.CWAH, seed, i) for seed in TUNING_REPORTED for i in range(20)]
    tdw_tuning = [fresh_episode(Benchmark.TDWMAT, seed, i) for seed in TUNING_REPORTED for i in range(12)]
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Targets: on C-WAH pce's mean steps at most 1.25 × the oracle's and below mhp's "
        "at every team size; on TDW-MAT a transport rate at least mhp's and at least 0.85; at most 4 messages per "
        f"C-WAH episode. Tuning seeds: {TUNING_SEEDS} of the `cwah` / `tdwmat` generators; held-out fresh episodes: "
        f"seed {HELD_OUT_SEED}.",
        "",
        "| episodes | agents | pce | mhp | oracle | pce / oracle | pce < mhp | pce - mhp | pce msgs "
        "| pce seeing all | its / oracle |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, specs, counts in (
        ("cwah-test", cwah_test, (1, 2, 3, 4)),
        (f"cwah seed {HELD_OUT_SEED}", cwah_fresh, (1, 2, 3, 4)),
        (f"cwah seeds {TUNED} (tuned on)", cwah_tuning, (2,)),
    ):
        for n in counts:
            c = _compare(specs, n, _steps)
            lines.append(
                f"| {name} ({len(specs)}) | {n} | {c.pce:.1f} | {c.mhp:.1f} | {c.oracle:.1f} | "
                f"{c.pce / c.oracle:.2f} | {'yes' if c.pce < c.mhp else 'no'} | "
                f"{c.pce - c.mhp:+.1f} ± {c.difference_se:.1f} | "
                f"{c.pce_messages:.1f} | {c.pce_seeing_all:.1f} | {c.pce_seeing_all / c.oracle:.2f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "| episodes | agents | pce rate | mhp rate | oracle rate | pce ≥ mhp | pce - mhp | pce msgs | pce seeing all |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, specs in (
        ("tdwmat-test", tdw_test),
        (f"tdwmat seed {HELD_OUT_SEED}", tdw_fresh),
        (f"tdwmat seeds {TUNED} (tuned on)", tdw_tuning),
    ):
        c = _compare(specs, 2, _rate)
        lines.append(
            f"| {name} ({len(specs)}) | 2 | {c.pce:.3f} | {c.mhp:.3f} | {c.oracle:.3f} | "
            f"{'yes' if c.pce >= c.mhp else 'no'} | {c.pce - c.mhp:+.3f} ± {c.difference_se:.3f} | "
            f"{c.pce_messages:.1f} | {c.pce_seeing_all:.3f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "PCE's ablations on cwah-test (2 agents; the paper's Table 3 orders them: full PCE best, then without the "
        "Composer, without the Evaluator, without the Planner; physical-only and communication-only worse than both):",
        "",
        "| ablation | steps | messages |",
        "|---|---|---|",
    ]
    for ablation in ABLATIONS:
        rs = _run(cwah_test, "pce", 2, {"ablation": ablation})
        lines.append(f"| {ablation} | {_steps(rs):.1f} | {summarize(rs)['messages']:.1f} |")
        print(lines[-1], flush=True)
    lines += [
        "",
        "Symbolic PCE's time per decision (bench/timing.py: 2 agents, the whole test suite in one process on this "
        "2-core machine, after a warm-up episode; target: p95 under 50 ms):",
        "",
        *latency_table(("pce",)),
    ]
    lines += ["", *READING]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from ros_team import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/symbolic_planner.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
