"""Simulator and runner benchmarks; writes docs/benchmarks.md.

    make bench                      # == python bench/run_benchmarks.py --out docs/benchmarks.md

Measures: raw simulator primitive throughput per benchmark; wall time and peak memory of whole test-suite runs
(each in its own process, one core); the calibration of the rule-based, MCTS, random and oracle teams against the
published baseline numbers; the paper-style comparison of every method on both suites (with the papers' talk,
travel and balance metrics); scaling with 2-4 agents; how fast a wrong switch fails; PCE's LLM-path token use; the
symbolic planner against mhp and the oracle, and its time per decision (bench/symbolic_planner.py); CoBel-World's
talk, quality and ablations (bench/cobel.py); REVECA's ablations and comparison (bench/reveca.py); the Mind-Map
agent against coela and its map at work (bench/mindmap.py); EvoCF's learning curve, ablations, K sweep,
operators and transfer (bench/evocf.py); EvoCF learning a home of our own making (bench/evocf_handling.py); each
paper's ablations on the test suites and fresh episodes, and every method against the oracle (bench/ablations.py);
the decisions each switch changes (bench/ablation_decisions.py); every method's time per decision
(bench/timing.py); the ROS 2 team stack, a serving team's memory between tasks and a robot's nodes in one process
(bench/ros_team.py, bench/serving.py, bench/robot_process.py; skip with --skip-ros). The real-model sections
(bench/local_llm*.py, bench/task_words.py) are spliced in by their own scripts. ``--only-core`` runs this
script's own sections (minutes) and keeps the others as they are.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark
from coteam.methods.pce.scripted import scripted_pce_model
from coteam.registry import method_names
from coteam_harness.report import comparison, markdown, orderings_markdown, scaling_markdown
from coteam_harness.results import EpisodeResult, summarize
from coteam_harness.runner import run_episode
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer
from paper_orderings import ORDERINGS

# The team each benchmark is calibrated with, and the published numbers of its baseline.
PAPER_RANGES = {
    ("cwah-test", "mhp", 2): "papers: MHP 68–75 steps; target 60–90",
    ("cwah-test", "mhp", 1): "papers: MHP 111–114 steps; target 100–130",
    ("tdwmat-test", "rhp", 2): "papers: RHP 0.75–0.79; target 0.65–0.85",
    ("tdwmat-test", "rhp", 1): "papers: RHP 0.48–0.52; target 0.40–0.60",
}


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def primitive_throughput(suite: str, seconds: float = 3.0) -> float:
    """Primitives per second through Simulator.step with a random mix of valid-looking primitives."""
    scene = get_suite(suite).episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"), seed=0)
    rng = random.Random(0)
    ids = [i.id for i in scene.items] + [f.id for f in (*scene.containers, *scene.surfaces)]
    if suite.startswith("cwah"):
        kinds = [PrimitiveKind.WALK] * 6 + [PrimitiveKind.OPEN, PrimitiveKind.GRAB, PrimitiveKind.PUT_ON]
    else:
        kinds = [PrimitiveKind.MOVE_FORWARD] * 4 + [
            PrimitiveKind.TURN_LEFT,
            PrimitiveKind.TURN_RIGHT,
            PrimitiveKind.GRASP,
            PrimitiveKind.DROP,
        ]

    def random_primitive() -> Primitive:
        k = rng.choice(kinds)
        if k in (PrimitiveKind.WALK, PrimitiveKind.OPEN, PrimitiveKind.GRAB):
            return Primitive(k, (rng.choice(ids),))
        if k == PrimitiveKind.PUT_ON:
            return Primitive(k, (rng.choice(ids), rng.choice(ids)))
        if k == PrimitiveKind.GRASP:
            return Primitive(k, (rng.choice(ids), rng.randrange(2)))
        if k == PrimitiveKind.DROP:
            return Primitive(k, (rng.randrange(2),))
        return Primitive(k)

    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = {a: random_primitive() for a in sim.agents if sim.is_ready(a)}
        sim.step(actions)
        for a in sim.agents:
            sim.observe(a)
        count += len(actions)
        if sim.out_of_time():
            sim = Simulator(scene, ("alice", "bob"), seed=count)
    return count / (time.perf_counter() - start)


_CHILD = (
    "import resource, sys\n"
    "from coteam.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def timed_run(suite: str, team: str, agents: int) -> dict:
    """Run `coteam run` in a child process; wall time, the child's peak RSS and the suite summary."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-c",
            _CHILD,
            "run",
            "--suite",
            suite,
            "--team",
            team,
            "--agents",
            str(agents),
            "--out",
            out,
            "--quiet",
            "--workers",
            "1",  # one process: its wall time and peak memory are the run's
        ]
        start = time.perf_counter()
        proc = subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        peak_kb = int(proc.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
        saved = json.loads((Path(out) / "results.json").read_text())
    episodes = [EpisodeResult(**e) for e in saved["episodes"]]
    return {**saved["summary"], "wall_s": wall, "peak_mb": peak_kb / 1024, "results": episodes}


def pce_llm_tokens(episodes: int = 3) -> dict:
    """PCE on the LLM path: a real OpenAI client, the loopback server and a scripted model; tokens as reported."""
    rows = []
    for spec in get_suite("cwah-test").episodes()[:episodes]:
        with LoopbackOpenAIServer(scripted_pce_model) as server:
            start = time.perf_counter()
            r = run_episode(spec.build(), "pce", params={"backend": "llm", "base_url": server.base_url}, n_agents=2)
            wall = time.perf_counter() - start
            reported = sum(u["total_tokens"] for u in server.usages)
        assert r.tokens == reported, f"ledger {r.tokens} != server {reported}"
        rows.append({"episode": spec.name, "tokens": r.tokens, "calls": r.llm_calls, "steps": r.steps, "wall_s": wall})
    return {"rows": rows, "tokens_per_episode": statistics.fmean(x["tokens"] for x in rows)}


def scaling(suite: str, methods: tuple[str, ...] = ("pce", "mhp"), counts: tuple[int, ...] = (2, 3, 4)) -> str:
    """``coteam bench --agents 2,3,4``'s scaling table, from in-process runs of the whole suite."""
    by_count = {
        n: {
            m: [run_episode(s.build(), m, n_agents=n, episode_name=s.name) for s in get_suite(suite).episodes()]
            for m in methods
        }
        for n in counts
    }
    return scaling_markdown(by_count, Benchmark(get_suite(suite).benchmark), suite)


def switch_error_seconds(method: str) -> tuple[float, int, str]:
    """Wall time of `coteam run --set lamda=1` (a misspelt switch) in a fresh process: exit code and message."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "cwah-test", "--team", method]
        start = time.perf_counter()
        proc = subprocess.run([*cmd, "--set", "lamda=1", "--out", out], capture_output=True, text=True)
        return time.perf_counter() - start, proc.returncode, proc.stderr.strip()


def talk_summary(runs: dict[str, dict[str, list[EpisodeResult]]]) -> list[str]:
    """The talk of pce and cobel against the communication-heavy coela, per suite."""
    lines = []
    for suite, by_method in runs.items():
        if "coela" not in by_method:
            continue
        coela = summarize(by_method["coela"])
        for method in ("pce", "cobel"):
            if method in by_method:
                s = summarize(by_method[method])
                lines.append(
                    f"- {suite}: {method} sends {s['messages']:.1f} messages ({s['comm_tokens']:.0f} comm tokens) "
                    f"per episode, coela {coela['messages']:.1f} ({coela['comm_tokens']:.0f}): "
                    f"{s['comm_tokens'] / coela['comm_tokens']:.0%} of coela's comm tokens."
                )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/benchmarks.md")
    parser.add_argument("--teams", default=",".join(method_names()))
    parser.add_argument("--skip-ros", action="store_true", help="leave out the ROS 2 team stack section")
    parser.add_argument(
        "--only-core",
        action="store_true",
        help="only this script's own sections; those of the other bench scripts stay as they are in --out",
    )
    args = parser.parse_args()
    teams = [t for t in args.teams.split(",") if t]
    lines = [
        "# Benchmarks",
        "",
        f"Produced by `python bench/run_benchmarks.py {' '.join(sys.argv[1:])}` (`make bench` runs every method) on "
        f"{platform.machine()} with {platform.python_implementation()} {platform.python_version()}; "
        "each suite run is one single-threaded process. Numbers are from one run on a noisy shared machine: "
        "compare ratios within this page, not absolute times across machines.",
        "",
        "## Simulator primitive throughput",
        "",
        "| benchmark | primitives / s (2 agents, random primitive mix, observations included) |",
        "|---|---|",
    ]
    for suite in ("cwah-test", "tdwmat-test"):
        rate = primitive_throughput(suite)
        print(f"{suite}: {rate:.0f} primitives/s", flush=True)
        lines.append(f"| {suite.split('-')[0]} | {rate:,.0f} |")
    lines += [
        "",
        "## Whole test suites: wall time, peak memory, calibration",
        "",
        "C-WAH: mean steps to finish (failure counts as 250). TDW-MAT: mean transport rate after 3000 frames "
        "(food / stuff split). Targets: a full `cwah-test` run with the rule-based team under 30 s and "
        "`tdwmat-test` under 120 s.",
        "",
        "| suite | team | agents | steps (TDW-MAT: frames) | transport rate | food | stuff | success | ms/decision "
        "| wall s | peak MB | reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    two_agent_runs: dict[str, dict[str, list[EpisodeResult]]] = {}
    for suite in ("cwah-test", "tdwmat-test"):
        for team in teams:
            for agents in (2, 1) if team in ("rhp", "mhp") else (2,):
                r = timed_run(suite, team, agents)
                if agents == 2:
                    two_agent_runs.setdefault(suite, {})[team] = r["results"]
                ref = PAPER_RANGES.get((suite, team, agents), "")
                print(
                    suite,
                    team,
                    agents,
                    json.dumps({k: r[k] for k in ("steps", "transport_rate", "wall_s")}),
                    flush=True,
                )
                lines.append(
                    f"| {suite} | {team} | {agents} | {r['steps']:.1f} | {r['transport_rate']:.3f} | "
                    f"{_rate(r.get('food_rate'))} | {_rate(r.get('stuff_rate'))} | "
                    f"{r['success_rate']:.0%} | {r['decision_ms_mean']:.1f} | {r['wall_s']:.1f} | {r['peak_mb']:.0f} "
                    f"| {ref} |"
                )
    lines += [
        "",
        "Peak MB of the teams that talk (pce, coela) includes the o200k tokenizer's tables, loaded by the episode's "
        "first message to count its comm tokens.",
    ]
    lines += [
        "",
        "## Method comparison",
        "",
        "The same two-agent runs as the table above, as `coteam bench --suite SUITE --methods ...` prints them "
        "(symbolic backend: Usages are 0 because no model is called). C-WAH: fewer steps is better; TDW-MAT: a "
        "higher transport rate is better; the last column is the ratio to the oracle.",
    ]
    for suite, runs in two_agent_runs.items():
        benchmark = runs[next(iter(runs))][0].benchmark
        rows = comparison(runs, Benchmark(benchmark))
        lines += ["", markdown(rows, Benchmark(benchmark), suite).replace("## ", "### ", 1).rstrip()]
    lines += [
        "",
        "Communication (papers: PCE about 2 messages per C-WAH episode against about 10 for CoELA; CoBel-World "
        "counts talk in tokens):",
        "",
        *talk_summary(two_agent_runs),
        "",
        "### The papers' orderings on our simulator",
        "",
        "Each paper's comparison of two of our methods (its figures), and whether our runs above reproduce it:",
        "",
        *orderings_markdown(two_agent_runs, ORDERINGS),
        "",
        "## Scaling with the number of agents",
        "",
        "The whole test suites with 2, 3 and 4 agents, as "
        "`coteam bench --suite SUITE --methods pce,mhp --agents 2,3,4` prints them (papers: steps fall as agents "
        "are added).",
    ]
    for suite in ("cwah-test", "tdwmat-test"):
        table = scaling(suite)
        print(table, flush=True)
        lines += ["", table.replace("## ", "### ", 1).rstrip()]
    errors = [(m, *switch_error_seconds(m)) for m in teams]
    lines += [
        "",
        "## A wrong switch fails fast",
        "",
        "`coteam run --suite cwah-test --team METHOD --set lamda=1` in a fresh process (interpreter start-up and "
        "imports included): it exits with status 2 and one line before any episode; target under 2 s.",
        "",
        "| method | seconds | exit | message |",
        "|---|---|---|---|",
        *[f"| {m} | {s:.2f} | {code} | `{msg}` |" for m, s, code, msg in errors],
    ]
    llm = pce_llm_tokens()
    print("pce llm", llm["tokens_per_episode"], flush=True)
    lines += [
        "",
        "## PCE decisions",
        "",
        "Symbolic PCE's time per decision is in the section on the symbolic planner below.",
        "",
        "PCE on the LLM path (a real `openai` client, the loopback OpenAI-compatible server and a scripted model "
        "that answers every role with valid JSON; token counts are the server's `usage`, checked equal to the "
        "ledger's):",
        "",
        "| episode | steps | LLM calls | tokens | wall s |",
        "|---|---|---|---|---|",
        *[
            f"| {x['episode']} | {x['steps']} | {x['calls']} | {x['tokens']:,} | {x['wall_s']:.1f} |"
            for x in llm["rows"]
        ],
        "",
        f"Mean tokens per episode: {llm['tokens_per_episode']:,.0f} (prompts are the full context of each role; "
        "a real model's own output length changes the completion share).",
    ]
    lines += [
        "",
        "## How the simulator was calibrated",
        "",
        "Two constants of `coteam.domain.physics.Physics` set the time scale; everything else follows the benchmark "
        "rules.",
        f"- C-WAH walking speed: `cwah_walk_step_m = {Physics().cwah_walk_step_m}` m per step, chosen so the MCTS "
        "helper (`mhp`, the MHP-like baseline) lands in the papers' range with one and with two agents.",
        f"- TDW-MAT frame costs `{Physics().tdw_frames}`, chosen so the rule-based helper (`rhp`, the RHP-like "
        "baseline) lands in the papers' transport-rate range with one and with two agents.",
        "",
        "`oracle` (full observability, exact joint planning on C-WAH) is the reference: every other team needs more "
        "steps or transports less. `random` is the lower bound.",
    ]
    if not args.only_core:
        lines += other_sections(f"python bench/run_benchmarks.py {' '.join(sys.argv[1:])}", ros=not args.skip_ros)
    out = Path(args.out)
    text = "\n".join(lines) + "\n"
    out.write_text(with_other_sections(text, out.read_text()) if out.exists() else text)
    print(f"wrote {args.out}")
    return 0


def other_sections(command: str, ros: bool) -> list[str]:
    """The sections the other bench scripts make (bench/ is on sys.path when this file runs as a script)."""
    from ablation_decisions import section as decisions_section
    from ablations import section as ablations_section
    from cobel import section as cobel_section
    from evocf import section as evocf_section
    from evocf_handling import section as evocf_handling_section
    from mindmap import section as mindmap_section
    from perception import section as perception_section
    from reveca import section as reveca_section
    from symbolic_planner import section as planner_section
    from timing import section as timing_section

    makers = [planner_section, cobel_section, reveca_section, mindmap_section, evocf_section, evocf_handling_section]
    makers.append(ablations_section)
    makers += [decisions_section, timing_section, perception_section]
    if ros:
        from robot_process import section as robot_process_section
        from ros_team import ros_section
        from serving import section as serving_section

        makers += [ros_section, serving_section, robot_process_section]
    lines: list[str] = []
    for make in makers:
        lines += ["", make(command).rstrip("\n")]
    return lines


def with_other_sections(new: str, old: str) -> str:
    """``new``, followed by the sections (``## `` headings) of ``old`` that ``new`` does not have: the ones other
    scripts splice in (the real-model and hybrid runs) survive a re-run of this one."""
    titles = {line for line in new.splitlines() if line.startswith("## ")}
    kept = [
        part.rstrip("\n")
        for part in re.split(r"(?m)^(?=## )", old)
        if part.startswith("## ") and part.splitlines()[0] not in titles
    ]
    return "\n\n".join([new.rstrip("\n"), *kept]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
