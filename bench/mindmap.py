"""The Mind-Map agent (``mindmap``) against coela: utterances and steps, and how often its map's mechanisms act.

    python bench/mindmap.py --out docs/benchmarks.md   # also run by make bench

Two agents, symbolic backend, each set run with the runner's seeds 0, 1 and 2 (the seed the value model's particles
and every other draw start from) and reported as mean ± standard deviation over the three, as the paper reports
C-WAH: both test sets and fresh episodes of the held-out seed 2026. Then how often the map's mechanisms act (plans
kept and revised, questions asked and answered). The paper's Table 3 is in bench/ablations.py with every paper's
ablations. Nothing here was tuned on. Re-running replaces the section of the same title.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import episodes  # bench/ is on sys.path when this file runs as a script
from coteam.domain.world import Benchmark
from coteam.registry import make_team
from coteam_harness.results import EpisodeResult, compared
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import EpisodeSpec, fresh_episode, get_suite

TITLE = "## Mind-Map: a mind map of intentions, plan and talk"
HELD_OUT_SEED = 2026
FRESH = {Benchmark.CWAH: 30, Benchmark.TDWMAT: 24}
RUN_SEEDS = (0, 1, 2)
# The paper's Table 3 (C-WAH, GPT-4o-mini, without key matching): steps and utterances per episode.
ABLATIONS: tuple[tuple[str, dict, str, str], ...] = (
    ("intentions", {"components": "intentions"}, "66.6", "6.0"),
    ("cooperation", {"components": "cooperation"}, "59.6", "6.5"),
    ("communication", {"components": "communication"}, "51.5", "1.6"),
    ("intentions + cooperation", {"components": "intentions,cooperation"}, "49.4", "4.8"),
    ("intentions + communication", {"components": "intentions,communication"}, "60.2", "2.9"),
    ("cooperation + communication", {"components": "cooperation,communication"}, "62.9", "3.3"),
    ("all three (the method)", {}, "55.6", "2.4"),
    ("all three, no_draft", {"no_draft": True}, "", ""),
)


def _runs(specs: list[EpisodeSpec], method: str, params: dict | None = None) -> list[list[EpisodeResult]]:
    """The episodes run once per run seed."""
    return [episodes.play(specs, method, params, seed=seed) for seed in RUN_SEEDS]


def _spread(runs: list[list[EpisodeResult]], key: str) -> str:
    means = [statistics.fmean(getattr(r, key) for r in run) for run in runs]
    digits = 3 if key == "transport_rate" else 1
    return f"{statistics.fmean(means):.{digits}f} ± {statistics.stdev(means):.{digits}f}"


def _comparison(benchmark: Benchmark, specs: list[EpisodeSpec]) -> list[str]:
    score = "steps" if benchmark == Benchmark.CWAH else "transport_rate"
    lines = [
        f"| method | {score.replace('_', ' ')} | messages / episode | comm tokens / episode |",
        "|---|---|---|---|",
    ]
    played: dict[str, list[EpisodeResult]] = {}
    for method in ("mindmap", "coela"):
        runs = _runs(specs, method)
        lines.append(
            f"| {method} | {_spread(runs, score)} | {_spread(runs, 'messages')} | {_spread(runs, 'comm_tokens')} |"
        )
        played[method] = runs[0]
    mindmap, coela = played["mindmap"], played["coela"]
    said = statistics.fmean(r.messages for r in mindmap) / max(statistics.fmean(r.messages for r in coela), 1e-9)
    lines += ["", f"mindmap against coela: {compared(mindmap, coela)}; {said:.0%} of coela's messages."]
    return lines


def _map_at_work(suite: str) -> list[str]:
    """How often each mechanism of the map acted, counted from the traces of the suite's episodes (run seed 0)."""
    kept = weighed = revised = asked = answered = decisions = 0
    with tempfile.TemporaryDirectory() as folder:
        for spec in get_suite(suite).episodes():
            trace = Path(folder) / "trace.json"
            run_episode(spec.build(), make_team("mindmap"), n_agents=2, trace_path=trace, episode_name=spec.name)
            data = load_trace(trace)
            for d in data["decisions"]:
                plan = d["rationale"].get("plan", "")
                decisions += 1
                kept += plan.startswith("kept: no news")
                weighed += plan.startswith("kept: its next step")
                revised += plan.startswith("revised")
            messages = data["messages"]
            for k, message in enumerate(messages):
                payload = json.loads(message["payload"] or "{}")
                if payload.get("kind") == "clarification":
                    asked += 1
                    later = [x for x in messages[k + 1 :] if x["sender"] == payload["to"]]
                    answered += bool(later) and bool(json.loads(later[0]["payload"] or "{}").get("plan"))
    return [f"| {suite} | {decisions} | {kept} | {weighed} | {revised} | {asked} | {answered} |"]


READING = [
    "How to read it. Each cell of the first tables is the mean over the three run seeds of the set's mean, ± the "
    "standard deviation of those three means; the lines under them are computed from run seed 0, paired over the "
    "same episodes (within noise: inside two standard errors). The paper (C-WAH, GPT-4o-mini) has CoELA at 65.4 "
    "steps and 12.1 utterances per episode and the Mind-Map agent at 57.0 and 1.5. The map at work counts, over "
    "every decision that made a map, the plans kept without news, kept after being weighed against the best "
    "option, and revised, and the questions asked and answered with a plan. The paper's Table 3 (which components "
    "the map keeps) and every method's time per decision are in the ablations section.",
]


def section(command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Two agents, symbolic backend, run seeds {', '.join(map(str, RUN_SEEDS))}.",
    ]
    sets = [(s, Benchmark(get_suite(s).benchmark), get_suite(s).episodes()) for s in ("cwah-test", "tdwmat-test")]
    sets += [
        (
            f"fresh `{b.value}` episodes of seed {HELD_OUT_SEED}",
            b,
            [fresh_episode(b, HELD_OUT_SEED, i) for i in range(n)],
        )
        for b, n in FRESH.items()
    ]
    for title, benchmark, specs in sets:
        lines += ["", f"### mindmap against coela: {title} ({len(specs)} episodes)", "", *_comparison(benchmark, specs)]
        print(title, flush=True)
    lines += [
        "",
        "### The map at work (run seed 0)",
        "",
        "| suite | decisions with a map | plan kept, no news | plan kept after weighing | plan revised | questions "
        "asked | answered with a plan |",
        "|---|---|---|---|---|---|---|",
        *_map_at_work("cwah-test"),
        *_map_at_work("tdwmat-test"),
        "",
        *READING,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/mindmap.py", __doc__ or "", section, TITLE, pooled=True)


if __name__ == "__main__":
    sys.exit(main())
